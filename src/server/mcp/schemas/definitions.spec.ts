import { describe, expect, it } from 'vitest';
import * as z from 'zod/v4';
import { MAX_BODY_BYTES } from '../../common/body-parsers.js';
import { definitionInput } from './definitions.js';

describe("validate_stack_definition's argument", () => {
  const parse = (definition: string) => z.strictObject(definitionInput).safeParse({ definition });

  it('takes a file up to the HTTP body limit, counted in bytes of UTF-8', () => {
    expect(parse('x'.repeat(MAX_BODY_BYTES)).success).toBe(true);
    expect(parse('é'.repeat(MAX_BODY_BYTES / 2)).success).toBe(true);
  });

  it('refuses one byte more, whether the characters are one byte or two', () => {
    for (const text of ['x'.repeat(MAX_BODY_BYTES + 1), 'é'.repeat(MAX_BODY_BYTES / 2) + 'x']) {
      const result = parse(text);
      expect(result.success).toBe(false);
      expect(result.error?.issues.map((i) => i.message)).toEqual([
        `definition exceeds the limit of ${MAX_BODY_BYTES} bytes`,
      ]);
    }
  });
});
