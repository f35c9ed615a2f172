import { describe, expect, it } from 'vitest';
import { textArray, uuidArray } from './array-literals.js';

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
});
