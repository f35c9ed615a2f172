import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { POWERSHELL_SINGLE_QUOTES, quotePosix, quotePowerShell, UnquotableError } from './shell-quote.js';

/** Where the hostile strings try to create files: it must stay empty. */
const TRAP = mkdtempSync(join(tmpdir(), 'shell-quote-'));
afterAll(() => rmSync(TRAP, { recursive: true, force: true }));

/** The strings that break naive quoting: expansions, separators, quotes of both shells, globs. */
const HOSTILE = [
  `$(touch ${TRAP}/a)`,
  `\`touch ${TRAP}/b\``,
  `'; touch ${TRAP}/c; '`,
  `"; touch ${TRAP}/d; "`,
  `\\n touch ${TRAP}/e`,
  '',
  ' ',
  "'",
  "''",
  "'\\''",
  '"',
  '\\',
  "\\'",
  '$(touch /tmp/pwned)',
  '`touch /tmp/pwned`',
  '${HOME}',
  '$HOME',
  '; rm -rf /tmp/x; #',
  "a' ; touch /tmp/pwned ; echo 'b",
  '&& | || > < >> 2>&1 &',
  '* ? [a-z] ~ ~root',
  '!! !$ ^a^b',
  '%PATH% %%',
  '-n',
  '-e \\x41',
  '\t tab',
  'ünïcödé — ✓ 🚀',
  '\u2018curly\u2019 \u201alow\u201b',
  "it's ‘mixed’ 'quotes'",
  '$env:PATH; & calc.exe',
  '@(1,2) @{a=1} $() ${x}',
  'sojt_abcdefghijklmnop.ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopq',
  'https://user:pass@example.test:8443/a b?c=d&e=$(f)#g',
  'x'.repeat(10_000),
];

/** Deterministic random strings over an alphabet heavy in shell-special characters. */
function randomStrings(seed: number, count: number): string[] {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
  const alphabet = [...'\'"`$\\;&|<>(){}[]*?~!#%^=-+ \t,.:/@aZ0é‘’‚‛“”—🚀'];
  return Array.from({ length: count }, () =>
    Array.from(
      { length: Math.floor(next() * 24) },
      () => alphabet[Math.floor(next() * alphabet.length)],
    ).join(''),
  );
}

/** Runs one `printf '%s\0' <quoted>...` through `<shell> -c` and splits what it printed. */
function roundTrip(shell: string[], values: string[]): string[] {
  const script = `printf '%s\\0' ${values.map(quotePosix).join(' ')}`;
  const [program, ...args] = shell;
  const run = spawnSync(program, [...args, '-c', script], { encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 });
  expect(run.stderr).toBe('');
  expect(run.status).toBe(0);
  return run.stdout.split('\0').slice(0, -1);
}

/**
 * PowerShell's verbatim-string-literal as the language specification gives it: opened and closed by
 * any single-quote-character, where two of them in a row stand for one. Returns the value and the
 * index of the closing quote.
 */
function readPowerShellVerbatim(text: string): { value: string; end: number } {
  const isQuote = (c: string | undefined) =>
    c !== undefined && (POWERSHELL_SINGLE_QUOTES as readonly string[]).includes(c);
  if (!isQuote(text[0])) throw new Error('not a verbatim string');
  let value = '';
  for (let i = 1; i < text.length; i++) {
    if (isQuote(text[i])) {
      if (!isQuote(text[i + 1])) return { value, end: i };
      i++;
    }
    value += text[i];
  }
  throw new Error('unterminated verbatim string');
}

describe('quotePosix', () => {
  it('wraps in single quotes and writes a quote as close, escaped quote, reopen', () => {
    expect(quotePosix('abc')).toBe("'abc'");
    expect(quotePosix('')).toBe("''");
    expect(quotePosix("it's")).toBe("'it'\\''s'");
  });

  const shells = [['/bin/sh'], ['/usr/bin/dash'], ['/usr/bin/bash'], ['/bin/busybox', 'sh']].filter(([s]) =>
    existsSync(s),
  );
  it('has a POSIX shell to run', () => {
    expect(shells[0]).toEqual(['/bin/sh']);
  });

  for (const shell of shells) {
    it(`gives ${shell.join(' ')} back exactly the hostile strings, nothing run`, () => {
      expect(roundTrip(shell, HOSTILE)).toEqual(HOSTILE);
      expect(readdirSync(TRAP)).toEqual([]);
    });

    it(`gives ${shell.join(' ')} back exactly 600 random strings of shell syntax`, () => {
      for (const seed of [1, 2, 3]) {
        const values = randomStrings(seed, 200);
        expect(roundTrip(shell, values)).toEqual(values);
      }
    });
  }

  it('keeps a quoted value one word, even next to others', () => {
    const run = spawnSync(
      '/bin/sh',
      ['-c', `set -- ${quotePosix('a b')} ${quotePosix("'; echo x")}; echo $#`],
      {
        encoding: 'utf8',
      },
    );
    expect(run.stdout).toBe('2\n');
  });
});

describe('quotePowerShell (by the language rules; no PowerShell here)', () => {
  it('doubles the apostrophe and every Unicode single-quote character', () => {
    expect(quotePowerShell('abc')).toBe("'abc'");
    expect(quotePowerShell("it's")).toBe("'it''s'");
    for (const quote of POWERSHELL_SINGLE_QUOTES) {
      expect(quotePowerShell(`a${quote}b`)).toBe(`'a${quote}${quote}b'`);
    }
    // The double quotes and dollars PowerShell would expand elsewhere stay as they are here.
    expect(quotePowerShell('"$env:X" $(y) `n')).toBe('\'"$env:X" $(y) `n\'');
  });

  it('reads back as one verbatim string ending at the last character', () => {
    for (const value of [...HOSTILE, ...randomStrings(4, 300)]) {
      const quoted = quotePowerShell(value);
      expect(readPowerShellVerbatim(quoted)).toEqual({ value, end: quoted.length - 1 });
    }
  });

  it('would end early without the doubling: the rule the reader checks is the one that matters', () => {
    const naive = `'${'a\u2019; calc'}'`;
    expect(readPowerShellVerbatim(naive).end).toBeLessThan(naive.length - 1);
  });
});

describe('values no quoting can carry', () => {
  it.each([
    ['NUL', 'a\0b', 'a NUL character'],
    ['LF', 'a\nb', 'a line break'],
    ['CR', 'a\rb', 'a line break'],
    ['NEL', 'a\u0085b', 'a line break'],
    ['LS', 'a\u2028b', 'a line break'],
    ['PS', 'a\u2029b', 'a line break'],
  ])('refuses %s in both shells', (_name, value, reason) => {
    for (const quote of [quotePosix, quotePowerShell]) {
      expect(() => quote(value)).toThrow(UnquotableError);
      expect(() => quote(value)).toThrow(reason);
    }
  });
});
