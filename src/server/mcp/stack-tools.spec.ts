import 'reflect-metadata';
import { describe, expect, it } from 'vitest';
import { MAX_BODY_BYTES } from '../common/body-parsers.js';
import { definitionSource } from './stack-tools.js';

describe('definitionSource', () => {
  it('takes a definition up to the HTTP body limit, counted in UTF-8 bytes', () => {
    const fits = 'a'.repeat(MAX_BODY_BYTES);
    expect(definitionSource(fits)).toBe(fits);
  });

  it('refuses a longer one with the HTTP body limit problem (413), also when only its bytes are too many', () => {
    for (const text of ['a'.repeat(MAX_BODY_BYTES + 1), 'é'.repeat(MAX_BODY_BYTES / 2 + 1)]) {
      expect(text.length <= MAX_BODY_BYTES + 1).toBe(true);
      expect(() => definitionSource(text)).toThrow(
        expect.objectContaining({ status: 413, code: 'payload_too_large' }),
      );
    }
  });
});
