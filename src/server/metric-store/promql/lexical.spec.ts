import { describe, expect, it } from 'vitest';
import { formatGoFloat, parseDuration, parseGoFloat, parseNumberLiteral, unquoteString } from './lexical.js';
import { expandTemplate } from './functions/labels.js';
import { compileRe2 } from '../re2.js';

describe('literals as 2.42 reads them', () => {
  it('durations: units in order, each at most once', () => {
    expect(parseDuration('1h30m')).toBe(5_400_000);
    expect(parseDuration('1y2w3d4h5m6s7ms')).toBe(
      365 * 86_400_000 + 14 * 86_400_000 + 3 * 86_400_000 + 4 * 3_600_000 + 5 * 60_000 + 6000 + 7,
    );
    expect(parseDuration('0')).toBe(0);
    expect(parseDuration('5')).toMatch(/missing unit/);
    expect(parseDuration('30m1h')).toMatch(/not a valid duration/);
    expect(parseDuration('1.5m')).toMatch(/not a valid duration/);
  });

  it('numbers: ParseInt with base 0 first, then ParseFloat', () => {
    expect(parseNumberLiteral('010')).toBe(8);
    expect(parseNumberLiteral('08')).toBe(8);
    expect(parseNumberLiteral('0x1f')).toBe(31);
    expect(parseNumberLiteral('0x8000000000000000')).toBeUndefined();
    // An octal literal beyond int64 falls back to decimal.
    expect(parseNumberLiteral('01777777777777777777777')).toBe(Number('1777777777777777777777'));
    expect(parseNumberLiteral('iNf')).toBe(Infinity);
    expect(parseNumberLiteral('- 1')).toBe(-1);
    expect(parseNumberLiteral('1e400')).toBeUndefined();
    expect(parseNumberLiteral('1e-400')).toBe(0);
    expect(parseNumberLiteral('1_000')).toBeUndefined();
  });

  it('strings: Go escapes in quotes, none between backquotes', () => {
    expect(unquoteString('"a\\tb\\x41\\101\\u00e9\\U0001F600"')).toBe('a\tbAAé😀');
    expect(unquoteString("'it\\'s'")).toBe("it's");
    expect(unquoteString('`a\\n`')).toBe('a\\n');
    expect(unquoteString('"\\q"')).toBeUndefined();
    expect(unquoteString('"\\400"')).toBeUndefined();
    expect(unquoteString('"\\ud800"')).toBeUndefined();
  });

  it('Go float text: ParseFloat forms, FormatFloat(f, -1)', () => {
    expect(parseGoFloat('+Inf')).toBe(Infinity);
    expect(parseGoFloat('1e3')).toBe(1000);
    expect(parseGoFloat('0x1p-2')).toBe(0.25);
    expect(parseGoFloat('abc')).toBeUndefined();
    expect(parseGoFloat('')).toBeUndefined();
    expect(formatGoFloat(1e21)).toBe('1000000000000000000000');
    expect(formatGoFloat(1.5e-7)).toBe('0.00000015');
    expect(formatGoFloat(-2.5e22)).toBe('-25000000000000000000000');
    expect(formatGoFloat(0.1)).toBe('0.1');
    expect(formatGoFloat(-Infinity)).toBe('-Inf');
    expect(formatGoFloat(NaN)).toBe('NaN');
  });
});

describe("Go's regexp template expansion (label_replace)", () => {
  it('expands $n, ${n}, $name and $$ as Go does', () => {
    const re = compileRe2('(?P<first>a+)(b*)');
    const m = re.exec('aab')!;
    expect(expandTemplate('$1-$2-${first}-$first', re, m)).toBe('aa-b-aa-aa');
    // `$2x` names the group "2x", which does not exist.
    expect(expandTemplate('$2x|${2}x|$$|$', re, m)).toBe('|bx|$|$');
    expect(expandTemplate('$01|${1', re, m)).toBe('|${1');
  });

  it('takes a name from the first group of that name that matched', () => {
    const re = compileRe2('(?P<n>x)|(?P<n>y)');
    expect(expandTemplate('[$n]', re, re.exec('y')!)).toBe('[y]');
    expect(expandTemplate('[$n]', re, re.exec('x')!)).toBe('[x]');
  });
});
