/**
 * Quoting for the one-line install commands a person pastes into a terminal. Only single-quoted
 * literals: in both shells nothing inside them is expanded, so the only characters that need care are
 * the quotes themselves.
 */

/** A value that cannot be put on one command line in any quoting. */
export class UnquotableError extends Error {
  constructor(readonly reason: string) {
    super(`cannot quote a value that contains ${reason}`);
    this.name = 'UnquotableError';
  }
}

/**
 * Characters that end a line for one shell or terminal or another: a pasted one-liner would run as
 * two commands, or a NUL would cut it short. Refused rather than quoted.
 */
const LINE_BREAKING: [RegExp, string][] = [
  [/\0/, 'a NUL character'],
  [/[\r\n\u0085\u2028\u2029]/, 'a line break'],
];

function refuseLineBreaks(value: string): void {
  for (const [pattern, reason] of LINE_BREAKING) if (pattern.test(value)) throw new UnquotableError(reason);
}

/** `value` as one POSIX sh word: `'...'`, where a `'` is written `'\''` (close, escaped quote, reopen). */
export function quotePosix(value: string): string {
  refuseLineBreaks(value);
  return `'${value.replaceAll("'", "'\\''")}'`;
}

/**
 * PowerShell ends a single-quoted string at any of these, not only at the ASCII apostrophe (the
 * language's single-quote-character), and reads two of them in a row as one literal character.
 */
export const POWERSHELL_SINGLE_QUOTES = ["'", '\u2018', '\u2019', '\u201a', '\u201b'] as const;

const POWERSHELL_QUOTE = new RegExp(`[${POWERSHELL_SINGLE_QUOTES.join('')}]`, 'g');

/** `value` as one PowerShell verbatim string: `'...'` with every single-quote character doubled. */
export function quotePowerShell(value: string): string {
  refuseLineBreaks(value);
  return `'${value.replace(POWERSHELL_QUOTE, (quote) => quote + quote)}'`;
}
