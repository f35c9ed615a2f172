import * as z from 'zod/v4';
import { MAX_BODY_BYTES } from '../../common/body-parsers.js';

/** validate_stack_definition's output, mirroring `ValidationSummary` in `src/contracts/api/stacks.ts`, and its input. */
export const validationSummary = {
  valid: z.literal(true),
  stackkit: z.string(),
  variant: z.string(),
  services: z.array(z.string()).describe('Service names in dependency order, monitoring services included'),
  warnings: z.array(
    z.object({
      path: z.string(),
      category: z.enum([
        'missing_required_field',
        'invalid_service_name',
        'unsupported_stackkit',
        'resource_constraint',
        'invalid_value',
      ]),
      message: z.string(),
      line: z.number().nullable(),
      column: z.number().nullable(),
    }),
  ),
};

const TOO_LARGE = `definition exceeds the limit of ${MAX_BODY_BYTES} bytes`;

/**
 * validate_stack_definition's argument, bounded like the HTTP route's YAML body: MAX_BODY_BYTES of
 * UTF-8, as the body parser counts them. Over /mcp the JSON-RPC request shares that limit, so the
 * transport refuses a file this large first (413); the bound holds whatever carries the call.
 */
export const definitionInput = {
  definition: z
    .string()
    .max(MAX_BODY_BYTES, { error: TOO_LARGE, abort: true })
    .refine((text) => Buffer.byteLength(text, 'utf8') <= MAX_BODY_BYTES, { error: TOO_LARGE })
    .describe('The whole stack definition file as YAML text'),
};
