import { describe, expect, it } from 'vitest';
import { jsonTooDeep, MAX_JSON_DEPTH } from './body-parsers.js';

describe('jsonTooDeep', () => {
  it('allows the limit and refuses one level more', () => {
    expect(jsonTooDeep(Buffer.from(`${'['.repeat(MAX_JSON_DEPTH)}${']'.repeat(MAX_JSON_DEPTH)}`))).toBe(
      false,
    );
    expect(
      jsonTooDeep(Buffer.from(`${'['.repeat(MAX_JSON_DEPTH + 1)}${']'.repeat(MAX_JSON_DEPTH + 1)}`)),
    ).toBe(true);
  });

  it('ignores brackets inside strings, escaped quotes included', () => {
    expect(jsonTooDeep(Buffer.from(JSON.stringify({ a: '['.repeat(100), b: '\\"{{{{'.repeat(50) })))).toBe(
      false,
    );
  });

  it('counts mixed objects and arrays', () => {
    expect(jsonTooDeep(Buffer.from('{"a":'.repeat(40) + '1' + '}'.repeat(40)))).toBe(true);
  });
});
