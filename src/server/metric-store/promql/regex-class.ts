/**
 * RE2 bracket classes for regex.ts: a leading `]` is literal, POSIX `[:name:]` classes, escapes,
 * ranges (checked), and case folding spelled out under (?i).
 */
import { escape, RegexSyntaxError, type Flags } from './regex.js';

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
  punct: '!-\\/:-@\\[-`{-~',
  space: '\\t\\n\\v\\f\\r ',
  upper: 'A-Z',
  word: '0-9A-Za-z_',
  xdigit: '0-9A-Fa-f',
};

interface Atom {
  text: string;
  cp?: number;
  length: number;
}

function classChar(cp: number): string {
  const c = String.fromCodePoint(cp);
  return /[\\\]^-]/.test(c) ? `\\${c}` : c;
}

function atom(s: string, j: number): Atom {
  if (s[j] === '\\') {
    const esc = escape(s, j + 1, true);
    if (esc) return { text: esc[0], cp: esc[2], length: 1 + esc[1] };
    const cp = s.codePointAt(j + 1)!;
    return { text: classChar(cp), cp, length: 1 + String.fromCodePoint(cp).length };
  }
  const cp = s.codePointAt(j)!;
  return { text: classChar(cp), cp, length: String.fromCodePoint(cp).length };
}

/** The other case of a letter (or letter range), for (?i). */
function otherCase(lo: number, hi: number): string {
  const isLower = (cp: number): boolean => cp >= 0x61 && cp <= 0x7a;
  const isUpper = (cp: number): boolean => cp >= 0x41 && cp <= 0x5a;
  if (isLower(lo) && isLower(hi)) return `${classChar(lo - 32)}-${classChar(hi - 32)}`;
  if (isUpper(lo) && isUpper(hi)) return `${classChar(lo + 32)}-${classChar(hi + 32)}`;
  if (lo === hi) {
    const c = String.fromCodePoint(lo);
    const flipped = c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase();
    return flipped !== c && flipped.length === 1 ? classChar(flipped.codePointAt(0)!) : '';
  }
  return '';
}

/** The class starting at s[i] ('['): [JS class, length of the RE2 class]. */
export function translateClass(s: string, i: number, flags: Flags): [string, number] {
  let j = i + 1;
  let out = '[';
  if (s[j] === '^') {
    out += '^';
    j++;
  }
  let first = true;
  while (j < s.length && (s[j] !== ']' || first)) {
    first = false;
    const posix = /^\[:(\^?)([a-z]+):\]/.exec(s.slice(j));
    if (posix) {
      const cls = POSIX_CLASSES[posix[2]];
      if (!cls || posix[1]) throw new RegexSyntaxError(`invalid character class range: \`${posix[0]}\``);
      out += cls + (flags.i && (posix[2] === 'lower' || posix[2] === 'upper') ? 'A-Za-z' : '');
      j += posix[0].length;
      continue;
    }
    const lo = atom(s, j);
    j += lo.length;
    if (s[j] === '-' && s[j + 1] !== ']' && j + 1 < s.length) {
      const hi = atom(s, j + 1);
      if (lo.cp === undefined || hi.cp === undefined || hi.cp < lo.cp)
        throw new RegexSyntaxError(
          `invalid character class range: \`${s.slice(j - lo.length, j + 1 + hi.length)}\``,
        );
      out += `${lo.text}-${hi.text}` + (flags.i ? otherCase(lo.cp, hi.cp) : '');
      j += 1 + hi.length;
      continue;
    }
    out += lo.text + (flags.i && lo.cp !== undefined ? otherCase(lo.cp, lo.cp) : '');
  }
  if (s[j] !== ']') throw new RegexSyntaxError(`missing closing ]: \`${s.slice(i)}\``);
  return [out + ']', j + 1 - i];
}
