import { describe, expect, it } from 'vitest';
import { LiteralMemo, textArray, uuidArray } from './array-literals.js';

describe('array literals', () => {
  it('joins UUIDs unquoted and refuses anything else', () => {
    const ids = ['0b8e4a1e-8c1f-4f37-9a4e-2d7e3c1b5a60', 'FFFFFFFF-0000-4000-8000-000000000000'];
    expect(uuidArray(ids)).toBe(`{${ids[0]},${ids[1]}}`);
    expect(uuidArray([])).toBe('{}');
    expect(() => uuidArray(['x}', ids[0]])).toThrow('not a UUID');
  });

  it('quotes every text element, escaping backslashes and double quotes', () => {
    expect(textArray(['a', 'NULL', 'b,c', 'say "hi"', 'back\\slash', '{x}', ''])).toBe(
      '{"a","NULL","b,c","say \\"hi\\"","back\\\\slash","{x}",""}',
    );
    expect(textArray([])).toBe('{}');
  });
  it('reuses the last literal while the values stay the same, and only then', () => {
    let builds = 0;
    const memo = new LiteralMemo((values) => {
      builds++;
      return uuidArray(values);
    });
    const a = '0b8e4a1e-8c1f-4f37-9a4e-2d7e3c1b5a60';
    const b = 'ffffffff-0000-4000-8000-000000000000';
    const ids = [a, b];
    expect(memo.of(ids)).toBe(`{${a},${b}}`);
    expect(memo.of([a, b])).toBe(`{${a},${b}}`);
    expect(builds).toBe(1);
    // The caller's array changing afterwards does not change what was remembered.
    ids.push(a);
    expect(memo.of([a, b])).toBe(`{${a},${b}}`);
    expect(builds).toBe(1);
    expect(memo.of([b, a])).toBe(`{${b},${a}}`);
    expect(memo.of([b])).toBe(`{${b}}`);
    expect(memo.of([])).toBe('{}');
    expect(memo.of([])).toBe('{}');
    expect(builds).toBe(4);
    expect(() => memo.of(['x}'])).toThrow('not a UUID');
    // A refused array is not remembered: the last good literal stays.
    expect(memo.of([])).toBe('{}');
    expect(builds).toBe(5);
  });
});
