/**
 * Go RE2 regular expressions (Go 1.19, as Prometheus 2.42 has them) on JavaScript's engine.
 * Prometheus anchors every regex as `^(?:re)$`. The pattern is translated to a flag-less JS
 * pattern with the same meaning: flag groups `(?imsU)` and `(?flags:...)` anywhere (case folding
 * spelled out as classes, `.` and `^`/`$` per the flags, greediness swapped), RE2's escapes
 * (octal, `\x{...}`, `\a`, `\Q...\E`, ASCII `\s`), POSIX classes, `(?P<name>`; what RE2 refuses
 * (look-around, back-references, `(?<name>`, repeat counts over 1000, unknown escapes) is
 * refused. Not supported: Unicode classes (`\pL`) and negated POSIX classes.
 */
import { translateClass } from './regex-class.js';

export class RegexSyntaxError extends Error {
  constructor(message: string) {
    super(`error parsing regexp: ${message}`);
  }
}

export interface Flags {
  i: boolean;
  s: boolean;
  m: boolean;
  U: boolean;
}

const cache = new Map<string, RegExp>();

/** `^(?:source)$` with RE2's meaning; throws RegexSyntaxError where RE2 would refuse it. */
export function compileAnchored(source: string): RegExp {
  let re = cache.get(source);
  if (re) return re;
  const body = translate(source);
  try {
    re = new RegExp(`^(?:${body})$`);
  } catch (err) {
    throw new RegexSyntaxError((err as Error).message);
  }
  if (cache.size > 1000) cache.clear();
  cache.set(source, re);
  return re;
}

/** A literal character as a JS pattern atom, both cases under (?i). */
export function literal(c: string, flags: Flags): string {
  if (flags.i) {
    const lower = c.toLowerCase();
    const upper = c.toUpperCase();
    if (lower !== upper && lower.length === 1 && upper.length === 1) return `[${lower}${upper}]`;
  }
  return /[\\^$.*+?()[\]{}|/-]/.test(c) ? `\\${c}` : c;
}

/**
 * A `\` escape RE2 accepts, at s[i] (just after the backslash): [JS atom or class part, length,
 * code point when it stands for one character]; null for an escaped punctuation character.
 */
export function escape(s: string, i: number, inClass: boolean): [string, number, number?] | null {
  const c = s[i];
  if (c === undefined) throw new RegexSyntaxError('trailing backslash at end of expression');
  if (/[0-7]/.test(c)) {
    // A lone non-zero digit would be a back-reference, which RE2 lacks; otherwise up to 3 octal digits.
    if (c !== '0' && !/[0-7]/.test(s[i + 1] ?? ''))
      throw new RegexSyntaxError(`invalid escape sequence: \`\\${c}\``);
    const digits = /^[0-7]{1,3}/.exec(s.slice(i))![0];
    const cp = parseInt(digits, 8);
    return [codePoint(cp), digits.length, cp];
  }
  if (c === 'x') {
    const hex = /^x(?:\{([0-9A-Fa-f]+)\}|([0-9A-Fa-f]{2}))/.exec(s.slice(i));
    if (!hex) throw new RegexSyntaxError('invalid escape sequence: `\\x`');
    const cp = parseInt(hex[1] ?? hex[2], 16);
    return [codePoint(cp), hex[0].length, cp];
  }
  const simple: Record<string, number> = { a: 7, f: 12, n: 10, r: 13, t: 9, v: 11 };
  if (c in simple) return [codePoint(simple[c]), 1, simple[c]];
  if (c === 's') return [inClass ? '\\t\\n\\f\\r ' : '[\\t\\n\\f\\r ]', 1];
  if (c === 'S') return [inClass ? '\\S' : '[^\\t\\n\\f\\r ]', 1];
  if (/[dDwW]/.test(c)) return [`\\${c}`, 1];
  if (!inClass && /[bB]/.test(c)) return [`\\${c}`, 1];
  if (!inClass && c === 'A') return ['^', 1];
  if (!inClass && c === 'z') return ['$', 1];
  if (/[A-Za-z0-9_]/.test(c)) throw new RegexSyntaxError(`invalid escape sequence: \`\\${c}\``);
  return null;
}

function codePoint(n: number): string {
  if (n > 0x10ffff) throw new RegexSyntaxError('invalid escape sequence');
  return n <= 0xffff ? `\\u${n.toString(16).padStart(4, '0')}` : String.fromCodePoint(n);
}

function translate(source: string): string {
  let flags: Flags = { i: false, s: false, m: false, U: false };
  const stack: Flags[] = [];
  let out = '';
  let i = 0;
  while (i < source.length) {
    const c = source[i];
    if (c === '\\') {
      if (source[i + 1] === 'Q') {
        const end = source.indexOf('\\E', i + 2);
        const text = source.slice(i + 2, end < 0 ? source.length : end);
        for (const ch of text) out += literal(ch, flags);
        i = end < 0 ? source.length : end + 2;
        continue;
      }
      const esc = escape(source, i + 1, false);
      if (esc) {
        out += esc[0];
        i += 1 + esc[1];
      } else {
        out += literal(source[i + 1], flags);
        i += 2;
      }
      continue;
    }
    if (c === '[') {
      const [cls, length] = translateClass(source, i, flags);
      out += cls;
      i += length;
      continue;
    }
    if (c === '(') {
      const [open, length, inner] = group(source, i, flags);
      if (inner === null) {
        // `(?flags)`: changes the flags for the rest of the enclosing group.
        flags = { ...flags, ...parseFlags(source.slice(i + 2, i + length - 1)) };
      } else {
        stack.push(flags);
        flags = inner;
        out += open;
      }
      i += length;
      continue;
    }
    if (c === ')') {
      if (stack.length === 0) throw new RegexSyntaxError(`unexpected ): \`${source}\``);
      flags = stack.pop()!;
      out += ')';
      i++;
      continue;
    }
    if ('*+?{'.includes(c)) {
      const q = /^(?:[*+?]|\{(\d+)(?:(,)(\d*))?\})/.exec(source.slice(i));
      if (q) {
        if (Number(q[1] ?? 0) > 1000 || Number(q[3] || 0) > 1000)
          throw new RegexSyntaxError(`invalid repeat count: \`${q[0]}\``);
        const lazy = source[i + q[0].length] === '?';
        out += q[0] + (lazy !== flags.U ? '?' : '');
        i += q[0].length + (lazy ? 1 : 0);
        continue;
      }
      out += '\\{';
      i++;
      continue;
    }
    if (c === '.') out += flags.s ? '[\\s\\S]' : '[^\\n]';
    else if (c === '^') out += flags.m ? '(?:^|(?<=\\n))' : '^';
    else if (c === '$') out += flags.m ? '(?:$|(?=\\n))' : '$';
    else if (c === '|') out += '|';
    else out += literal(c, flags);
    i++;
  }
  if (stack.length > 0) throw new RegexSyntaxError(`missing closing ): \`${source}\``);
  return out;
}

function parseFlags(text: string): Partial<Flags> {
  const [on, off = ''] = text.split('-');
  if (!/^[imsU]*$/.test(on) || !/^[imsU]*$/.test(off) || text.split('-').length > 2 || text === '-')
    throw new RegexSyntaxError(`invalid or unsupported Perl syntax: \`(?${text}\``);
  const out: Partial<Flags> = {};
  for (const f of on) out[f as keyof Flags] = true;
  for (const f of off) out[f as keyof Flags] = false;
  return out;
}

/** A group opening at s[i]: [JS text, length, flags inside] (flags null for a bare `(?flags)`). */
function group(s: string, i: number, flags: Flags): [string, number, Flags | null] {
  if (s[i + 1] !== '?') return ['(', 1, flags];
  const rest = s.slice(i);
  const named = /^\(\?P<([A-Za-z_][A-Za-z0-9_]*)>/.exec(rest);
  if (named) return [`(?<${named[1]}>`, named[0].length, flags];
  const modifier = /^\(\?([A-Za-z-]*)([:)])/.exec(rest);
  if (modifier) {
    const changed = { ...flags, ...parseFlags(modifier[1]) };
    if (modifier[2] === ')') {
      if (modifier[1] === '') throw new RegexSyntaxError('missing argument to repetition operator: `(?)`');
      return ['', modifier[0].length, null];
    }
    return ['(?:', modifier[0].length, changed];
  }
  throw new RegexSyntaxError(`invalid or unsupported Perl syntax: \`${rest.slice(0, 3)}\``);
}
