import { definitionRequest, type DefinitionRequest } from '../../stacks/definition/definition-request.js';
import * as z from 'zod/v4';
import { MAX_BODY_BYTES } from '../../common/body-parsers.js';

/** validate_stack_definition's output, mirroring `ValidationSummary` in `src/contracts/api/stacks.ts`, and its input. */
export const validationSummary = {
  valid: z.literal(true),
  format: z.enum(['stack', 'compose']).describe('How the file was read: our stack format or a Compose file'),
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

/** How a definition is read (CONTRACT.md, "Compose files"): the arguments every tool that takes one has beside it. */
export const definitionOptions = {
  format: z
    .enum(['compose', 'stack'])
    .optional()
    .describe('Force the format; by default a file with services and no stackkit is a Compose file'),
  name: z.string().optional().describe("Compose: the stack's name (else the file's top-level name)"),
  stackkit: z.string().optional().describe('Compose: the stack kit (else x-stackkit, else DEFAULT_STACKKIT)'),
  variant: z.string().optional().describe('Compose: the variant (else x-variant, else default)'),
  profiles: z.array(z.string()).optional().describe('Compose: the profiles to run'),
  variables: z
    .record(z.string(), z.string())
    .optional()
    .describe('Compose: the variables interpolation and pass-through environment entries read'),
};

export const definitionWithOptions = { ...definitionInput, ...definitionOptions };

/** The request a tool's arguments make, checked as HTTP checks its query and JSON body. */
export function toolDefinitionRequest(args: {
  definition: string;
  format?: string;
  name?: string;
  stackkit?: string;
  variant?: string;
  profiles?: string[];
  variables?: Record<string, string>;
}): DefinitionRequest {
  const { definition, variables, profiles, ...query } = args;
  return definitionRequest(
    { definition, ...(variables ? { variables } : {}), ...(profiles ? { profiles } : {}) },
    Object.fromEntries(Object.entries(query).filter(([, v]) => v !== undefined)),
  );
}
