/**
 * Go RE2 regular expressions on JavaScript's engine. Prometheus anchors every regex as
 * `^(?:re)$`; RE2's syntax mostly carries over, and what differs is translated here: `.` and `\s`
 * keep RE2's ASCII meaning, `(?P<name>` groups, `\A` `\z` `\Q...\E`, POSIX classes, leading flag
 * groups; what RE2 refuses (look-around, back-references) is refused. Flag groups anywhere but at
 * the start are not supported (V8 in Node 20 has no inline modifiers).
 */

const POSIX_CLASSES: Record<string, string> = {
  alnum: '0-9A-Za-z',
  alpha: 'A-Za-z',
  ascii: '\\x00-\\x7F',
  blank: '\\t ',
  cntrl: '\\x00-\\x1F\\x7F',
  digit: '0-9',
  graph: '!-~',
  lower: 'a-z',
  print: ' -~',
  punct: '!-\\/:-@[-`{-~',
  space: '\\t\\n\\v\\f\\r ',
  upper: 'A-Z',
  word: '0-9A-Za-z_',
  xdigit: '0-9A-Fa-f',
};
const SPACE = '\\t\\n\\f\\r ';

export class RegexSyntaxError extends Error {}

const cache = new Map<string, RegExp>();

/** `^(?:source)$` compiled with RE2's meaning; throws RegexSyntaxError when RE2 would refuse it. */
export function compileAnchored(source: string): RegExp {
  let re = cache.get(source);
  if (re) return re;
  const { body, flags } = translate(source);
  try {
    re = new RegExp(`^(?:${body})$`, flags);
  } catch (err) {
    throw new RegexSyntaxError(`error parsing regexp: ${(err as Error).message}`);
  }
  if (cache.size > 1000) cache.clear();
  cache.set(source, re);
  return re;
}

function translate(source: string): { body: string; flags: string } {
  let i = 0;
  let dotAll = false;
  let flags = '';
  const lead = /^\(\?([imsU]+)\)/.exec(source);
  if (lead) {
    if (lead[1].includes('i')) flags += 'i';
    if (lead[1].includes('s')) dotAll = true;
    // Multi-line and ungreedy modes would change the anchors Prometheus adds around the pattern.
    if (/[mU]/.test(lead[1]))
      throw new RegexSyntaxError(`error parsing regexp: flag group ${lead[0]} is not supported`);
    i = lead[0].length;
  }
  let out = '';
  let inClass = false;
  while (i < source.length) {
    const c = source[i];
    if (c === '\\') {
      const e = source[i + 1];
      if (e === undefined)
        throw new RegexSyntaxError('error parsing regexp: trailing backslash at end of expression');
      if (e === 'Q') {
        const end = source.indexOf('\\E', i + 2);
        const literal = source.slice(i + 2, end < 0 ? source.length : end);
        out += literal.replace(/[\\^$.*+?()[\]{}|/-]/g, '\\$&');
        i = end < 0 ? source.length : end + 2;
        continue;
      }
      if (/[1-9]/.test(e))
        throw new RegexSyntaxError(`error parsing regexp: invalid escape sequence: \`\\${e}\``);
      if (e === 'A' && !inClass) out += '^';
      else if (e === 'z' && !inClass) out += '$';
      else if (e === 's') out += inClass ? SPACE : `[${SPACE}]`;
      else if (e === 'S') out += inClass ? '\\S' : `[^${SPACE}]`;
      else if (e === 'p' || e === 'P' || e === 'C' || e === 'Z')
        throw new RegexSyntaxError(`error parsing regexp: unsupported escape \`\\${e}\``);
      else out += c + e;
      i += 2;
      continue;
    }
    if (inClass) {
      const posix = /^\[:(\^?)([a-z]+):\]/.exec(source.slice(i));
      if (posix && POSIX_CLASSES[posix[2]] && posix[1] === '') {
        out += POSIX_CLASSES[posix[2]];
        i += posix[0].length;
        continue;
      }
      if (c === ']') inClass = false;
      out += c;
      i++;
      continue;
    }
    if (c === '[') {
      inClass = true;
      out += c;
      i++;
      // A leading `]` (after an optional `^`) is a literal in RE2.
      if (source[i] === '^') out += source[i++];
      if (source[i] === ']') {
        out += '\\]';
        i++;
      }
      continue;
    }
    if (c === '(' && source[i + 1] === '?') {
      const rest = source.slice(i);
      const named = /^\(\?P?<([A-Za-z_][A-Za-z0-9_]*)>/.exec(rest);
      if (named) {
        out += `(?<${named[1]}>`;
        i += named[0].length;
        continue;
      }
      if (rest.startsWith('(?:')) {
        out += '(?:';
        i += 3;
        continue;
      }
      throw new RegexSyntaxError(
        `error parsing regexp: invalid or unsupported Perl syntax: \`${rest.slice(0, 3)}\``,
      );
    }
    out += c === '.' ? (dotAll ? '[\\s\\S]' : '[^\\n]') : c;
    i++;
  }
  return { body: out, flags };
}
