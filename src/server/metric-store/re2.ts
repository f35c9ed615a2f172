/**
 * Go regexp (RE2) syntax, as PromQL matchers use it, translated to an equivalent JavaScript
 * RegExp with the `u` flag. Everything is parsed and re-emitted rather than passed through, so
 * the differences are handled: `.` excludes only \n, `\s` is ASCII, POSIX classes, `\Q..\E`,
 * octal and `\x{..}` escapes, a `{` that is not a repeat is a literal, `(?P<name>..)`, the `s`
 * and `m` flags anywhere (emulated), `(?i)` for the whole pattern. Go's own syntax errors get Go's
 * messages; what Go accepts but this engine cannot do faithfully is refused with "unsupported".
 * Exponential backtracking: an unbounded repetition of a group that itself repeats (`(a+)+`,
 * `(a{1,3})*`) is refused, since Go runs it in linear time and a backtracking engine need not.
 * Overlapping alternatives under a repetition (`(a|aa)+`) are not caught: see the design doc.
 */
import { MetricInputError } from './errors.js';
import {
  complement,
  emitRanges,
  ESCAPED,
  GENERAL_CATEGORY,
  hex,
  MAX_CP,
  PERL,
  POSIX,
  type Range,
} from './re2-classes.js';

class Translator {
  private readonly cps: number[];
  private pos = 0;
  private ignoreCase = false;

  /** `iAt`: where a leading `(?i)` may stand to apply to the whole pattern. */
  constructor(
    private readonly pattern: string,
    private readonly iAt: number,
    private readonly shown = pattern,
  ) {
    this.cps = Array.from(pattern, (c) => c.codePointAt(0)!);
    if (this.cps.some((cp) => cp >= 0xd800 && cp <= 0xdfff)) this.fail('invalid UTF-8', pattern);
  }

  fail(code: string, fragment: string): never {
    throw new MetricInputError(`error parsing regexp: ${code}: \`${fragment}\``);
  }

  unsupported(what: string): never {
    throw new MetricInputError(`unsupported regular expression ${JSON.stringify(this.shown)}: ${what}`);
  }

  private rest(from: number, n = 8): string {
    return String.fromCodePoint(...this.cps.slice(from, from + n));
  }

  translate(): { source: string; flags: string } {
    const body = this.sequence({ s: false, m: false }, 0);
    if (this.pos < this.cps.length) this.fail('unexpected )', this.pattern);
    return { source: body.out, flags: this.ignoreCase ? 'iu' : 'u' };
  }

  /** An alternation up to an unmatched ')' or the end; reports whether it holds a repetition. */
  private sequence(flags: { s: boolean; m: boolean }, depth: number): { out: string; repeats: boolean } {
    let out = '';
    let repeats = false;
    // The last atom: where it starts in `out`, and what it is (repeatable or not).
    let atomAt = -1;
    let atomKind: 'none' | 'atom' | 'assertion' | 'repeated' = 'none';
    let atomRepeats = false;
    const cps = this.cps;
    while (this.pos < cps.length) {
      const start = this.pos;
      const c = String.fromCodePoint(cps[this.pos++]);
      let quant = '';
      if (c === '*' || c === '+' || c === '?') quant = c;
      else if (c === '{') quant = this.repeat(start);
      if (quant !== '') {
        if (cps[this.pos] === 0x3f) quant += String.fromCodePoint(cps[this.pos++]); // lazy
        if (atomKind === 'none') this.fail('missing argument to repetition operator', quant);
        if (atomKind === 'repeated') this.fail('invalid nested repetition operator', quant);
        const unbounded = quant[0] === '*' || quant[0] === '+' || /^\{\d+,\}/.test(quant);
        if (unbounded && atomRepeats)
          this.unsupported(
            'an unbounded repetition of a repetition (such as `(a+)+`) could take exponential time',
          );
        if (atomKind === 'assertion') out = `${out.slice(0, atomAt)}(?:${out.slice(atomAt)})`;
        out += quant;
        atomKind = 'repeated';
        repeats = true;
        continue;
      }
      if (c === ')') {
        if (depth === 0) this.fail('unexpected )', this.pattern);
        this.pos--;
        break;
      }
      if (c === '|') {
        out += '|';
        atomKind = 'none';
        continue;
      }
      atomAt = out.length;
      atomKind = 'atom';
      atomRepeats = false;
      if (c === '(') {
        const group = this.group(flags, depth);
        if (group === null) {
          atomKind = 'none';
          continue;
        }
        out += group.out;
        atomRepeats = group.repeats;
        repeats ||= group.repeats;
      } else if (c === '^' || c === '$') {
        atomKind = 'assertion';
        if (!flags.m) out += c;
        else out += c === '^' ? '(?:^|(?<=\\n))' : '(?:$|(?=\\n))';
      } else if (c === '.') out += flags.s ? '[\\u{0}-\\u{10ffff}]' : '[^\\n]';
      else if (c === '[') out += this.charClass(start);
      else if (c === '\\') {
        const escape = this.escape(start, false);
        if (escape === 'assertion') atomKind = 'assertion';
        out += this.lastEscape;
      } else out += hex(cps[start]);
    }
    return { out, repeats };
  }

  /** `{n}`, `{n,}` or `{n,m}` after the `{` at `start`; '' when it is a literal brace. */
  private repeat(start: number): string {
    const m = /^\{(\d+)(,(\d*))?\}/.exec(this.rest(start, 24));
    if (!m) return '';
    const min = Number(m[1]);
    const max = m[2] === undefined ? min : m[3] === '' ? Infinity : Number(m[3]);
    if (min > 1000 || (max !== Infinity && (max > 1000 || max < min)))
      this.fail('invalid repeat count', m[0]);
    this.pos = start + m[0].length;
    return m[0];
  }

  /** After '(': a group's translation, or null for a bare flag setting such as `(?i)`. */
  private group(outer: { s: boolean; m: boolean }, depth: number): { out: string; repeats: boolean } | null {
    const start = this.pos - 1;
    let flags = outer;
    if (this.cps[this.pos] === 0x3f /* ? */) {
      const head = this.rest(start, 300);
      const named = /^\(\?P<([^>]*)>/.exec(head);
      const setting = /^\(\?([a-zA-Z-]*)([:)])/.exec(head);
      if (named) {
        if (!/^\w+$/.test(named[1])) this.fail('invalid named capture', named[0]);
        this.pos = start + named[0].length;
      } else if (setting && (setting[1] !== '' || setting[2] === ')')) {
        flags = this.flags(setting[1], setting[0], outer, start);
        this.pos = start + setting[0].length;
        if (setting[2] === ')') {
          Object.assign(outer, flags);
          return null;
        }
      } else if (head.startsWith('(?:')) this.pos += 2;
      else this.fail('invalid or unsupported Perl syntax', head.slice(0, 3));
    }
    const inner = this.sequence({ ...flags }, depth + 1);
    if (this.cps[this.pos] !== 0x29) this.fail('missing closing )', this.pattern);
    this.pos++;
    return { out: `(?:${inner.out})`, repeats: inner.repeats };
  }

  private flags(spec: string, text: string, outer: { s: boolean; m: boolean }, start: number) {
    const flags = { ...outer };
    let on = true;
    let sign = 0;
    for (const f of spec) {
      if (f === '-') {
        if (!on || sign > 0) this.fail('invalid or unsupported Perl syntax', text);
        on = false;
        sign = 1;
        continue;
      }
      if (!on) sign = 2;
      if (f === 's' || f === 'm') flags[f] = on;
      else if (f === 'i') {
        // JS cannot scope case-insensitivity: only a leading (?i) for the whole pattern.
        if (on && start === this.iAt && text.endsWith(')') && !this.ignoreCase) this.ignoreCase = true;
        else if (on !== this.ignoreCase)
          this.unsupported('(?i) is supported only at the start of the pattern');
      } else if (f === 'U') this.unsupported('the U (ungreedy) flag');
      else this.fail('invalid or unsupported Perl syntax', text);
    }
    if (sign === 1) this.fail('invalid or unsupported Perl syntax', text);
    return flags;
  }

  private lastEscape = '';

  /**
   * After '\' at `start`: sets lastEscape to the translation. Returns 'assertion' for \A \z \b \B,
   * 'class' for a class (and fills classRanges/classText inside classes), 'literal' for one char.
   */
  private escape(start: number, inClass: boolean): 'assertion' | 'class' | 'literal' {
    const cps = this.cps;
    if (this.pos >= cps.length) this.fail('trailing backslash at end of expression', '');
    const c = String.fromCodePoint(cps[this.pos++]);
    const literal = (cp: number) => {
      this.literal = cp;
      this.lastEscape = hex(cp);
      return 'literal' as const;
    };
    if (!inClass && 'AzbB'.includes(c)) {
      this.lastEscape = c === 'A' ? '^' : c === 'z' ? '$' : `\\${c}`;
      return 'assertion';
    }
    if (c in ESCAPED) return literal(ESCAPED[c]);
    if (c >= '0' && c <= '7') {
      const m = /^[0-7]{1,3}/.exec(this.rest(this.pos - 1, 3))!;
      if (c !== '0' && m[0].length === 1) this.fail('invalid escape sequence', `\\${c}`);
      this.pos += m[0].length - 1;
      return literal(parseInt(m[0], 8));
    }
    if (c === 'x') {
      const m = /^(?:([0-9a-fA-F]{2})|\{([0-9a-fA-F]{1,6})\})/.exec(this.rest(this.pos, 9));
      const cp = m ? parseInt(m[1] ?? m[2], 16) : NaN;
      if (!m || cp > MAX_CP) this.fail('invalid escape sequence', `\\x${this.rest(this.pos, 4)}`);
      this.pos += m[0].length;
      return literal(cp);
    }
    const lower = c.toLowerCase();
    if (lower in PERL) {
      this.classRanges = c === lower ? PERL[lower] : complement(PERL[lower]);
      this.classText = '';
      this.lastEscape = `[${emitRanges(this.classRanges)}]`;
      return 'class';
    }
    if (c === 'p' || c === 'P') {
      let name = String.fromCodePoint(cps[this.pos++] ?? 0);
      if (name === '{') {
        const close = cps.indexOf(0x7d, this.pos);
        if (close < 0) this.fail('invalid character class range', this.rest(start, 12));
        name = String.fromCodePoint(...cps.slice(this.pos, close));
        this.pos = close + 1;
      }
      let negate = c === 'P';
      if (name.startsWith('^')) [negate, name] = [!negate, name.slice(1)];
      const property = name === 'Any' || GENERAL_CATEGORY.test(name) ? name : `Script=${name}`;
      const text = `\\${negate ? 'P' : 'p'}{${property}}`;
      try {
        new RegExp(text, 'u');
      } catch {
        this.fail('invalid character class range', `\\${c}{${name}}`);
      }
      this.classRanges = [];
      this.classText = text;
      this.lastEscape = inClass ? text : `[${text}]`;
      return 'class';
    }
    if (c === 'Q' && !inClass) {
      const end = this.pattern.indexOf('\\E', start);
      const stop = end < 0 ? cps.length : Array.from(this.pattern.slice(0, end)).length;
      this.lastEscape = cps.slice(this.pos, stop).map(hex).join('');
      this.pos = end < 0 ? cps.length : stop + 2;
      return 'literal';
    }
    const cp = cps[this.pos - 1];
    if (cp < 0x80 && !/[0-9A-Za-z]/.test(c)) return literal(cp);
    return this.fail('invalid escape sequence', `\\${c}`);
  }

  private literal = 0;
  private classRanges: Range[] = [];
  private classText = '';

  /** After '[' at `start`: the class as a JS class. */
  private charClass(start: number): string {
    const cps = this.cps;
    let negate = false;
    if (cps[this.pos] === 0x5e /* ^ */) {
      negate = true;
      this.pos++;
    }
    const ranges: Range[] = [];
    let text = '';
    let first = true;
    for (;;) {
      if (this.pos >= cps.length) this.fail('missing closing ]', this.rest(start, 16));
      const cp = cps[this.pos];
      if (cp === 0x5d /* ] */ && !first) {
        this.pos++;
        break;
      }
      first = false;
      const posix = /^\[:(\^?)([a-z]+):\]/.exec(this.rest(this.pos, 12));
      if (posix) {
        const set = POSIX[posix[2]];
        if (!set) this.fail('invalid character class range', posix[0]);
        ranges.push(...(posix[1] ? complement(set) : set));
        this.pos += posix[0].length;
        continue;
      }
      const lo = this.classChar(start);
      if (lo === null) {
        ranges.push(...this.classRanges);
        text += this.classText;
        continue;
      }
      if (cps[this.pos] === 0x2d /* - */ && cps[this.pos + 1] !== 0x5d && this.pos + 1 < cps.length) {
        this.pos++;
        const hi = this.classChar(start);
        if (hi === null || hi < lo) this.fail('invalid character class range', this.rest(start, 16));
        ranges.push([lo, hi]);
      } else ranges.push([lo, lo]);
    }
    return `[${negate ? '^' : ''}${emitRanges(ranges)}${text}]`;
  }

  /** One class member: a code point, or null for a class escape (classRanges/classText). */
  private classChar(start: number): number | null {
    const cp = this.cps[this.pos++];
    if (cp !== 0x5c /* \ */) return cp;
    const kind = this.escape(start, true);
    if (kind === 'class') return null;
    return this.literal;
  }
}

/**
 * The JS RegExp (to run with test(), a search) for a PromQL regex matcher value. Prometheus
 * compiles `^(?:` + value + `)$` and also parses the value alone, so both must be valid, and the
 * errors are the wrapped form's first: an unclosed `\Q` or a trailing backslash swallows the
 * wrapper's `)` and is reported as a missing one. Once both parse, the wrapped form is the value
 * fully anchored.
 */
export function translateRe2(pattern: string): { source: string; flags: string } {
  const wrapped = new Translator(`^(?:${pattern})$`, 4, pattern).translate();
  new Translator(pattern, 0).translate();
  return wrapped;
}
