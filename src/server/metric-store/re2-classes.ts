/** The character classes of Go's regexp syntax (re2.ts) as code point ranges, and their JS form. */

export type Range = [number, number];
export const MAX_CP = 0x10ffff;

/** Ranges from a spec like "0-9A-Za-z_" (a '-' between two characters makes a range). */
function ranges(spec: string): Range[] {
  const cps = Array.from(spec, (c) => c.codePointAt(0)!);
  const out: Range[] = [];
  for (let i = 0; i < cps.length; i++) {
    if (cps[i + 1] === 0x2d && i + 2 < cps.length) {
      out.push([cps[i], cps[i + 2]]);
      i += 2;
    } else out.push([cps[i], cps[i]]);
  }
  return out;
}

/** `[[:name:]]`, ASCII only as in Go. */
export const POSIX: Record<string, Range[]> = {
  alnum: ranges('0-9A-Za-z'),
  alpha: ranges('A-Za-z'),
  ascii: ranges('\x00-\x7f'),
  blank: ranges('\t '),
  cntrl: ranges('\x00-\x1f\x7f'),
  digit: ranges('0-9'),
  graph: ranges('!-~'),
  lower: ranges('a-z'),
  print: ranges(' -~'),
  punct: ranges('!-/:-@[-`{-~'),
  space: ranges('\t-\r '),
  upper: ranges('A-Z'),
  word: ranges('0-9A-Za-z_'),
  xdigit: ranges('0-9A-Fa-f'),
};

/** Perl classes as Go defines them: ASCII only, and \s without \v. */
export const PERL: Record<string, Range[]> = { d: POSIX.digit, s: ranges('\t\n\f\r '), w: POSIX.word };

/** Single-letter escapes of control characters. */
export const ESCAPED: Record<string, number> = { a: 7, f: 12, t: 9, n: 10, r: 13, v: 11 };

/** Unicode general categories, which JS writes \p{Lu}; other names are scripts, \p{Script=Greek}. */
export const GENERAL_CATEGORY = /^(?:[CLMNPSZ]|C[cfos]|L[lmotu]|M[cen]|N[dlo]|P[cdefios]|S[ckmo]|Z[lps])$/;

export function complement(list: Range[]): Range[] {
  const out: Range[] = [];
  let next = 0;
  for (const [lo, hi] of [...list].sort((a, b) => a[0] - b[0])) {
    if (lo > next) out.push([next, lo - 1]);
    next = Math.max(next, hi + 1);
  }
  if (next <= MAX_CP) out.push([next, MAX_CP]);
  return out;
}

/** A code point as a JS `u`-mode escape: valid inside and outside classes, whatever it is. */
export const hex = (cp: number) => `\\u{${cp.toString(16)}}`;

export const emitRanges = (list: Range[]) =>
  list.map(([lo, hi]) => (lo === hi ? hex(lo) : `${hex(lo)}-${hex(hi)}`)).join('');
