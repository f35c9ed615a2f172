import { stackSpecBytes } from '../../src/contracts/agent-protocol/limits.js';
import type {
  ServiceDefinition,
  ValidationIssue,
  ValidationResult,
} from '../../src/server/stacks/definition/definition.types.js';
import { validateDefinition } from '../../src/server/stacks/definition/validate-definition.js';
import { toServiceSpec } from '../../src/server/stacks/service-spec.js';

/** Shared by the unit specs of src/server/stacks/definition: run the validator and pick its answer apart. */

export const valid = (source: string) => {
  const result = validateDefinition(source);
  if (result.kind !== 'valid') throw new Error(`expected valid, got ${JSON.stringify(result, null, 2)}`);
  return result;
};

export const invalid = (source: string) => {
  const result = validateDefinition(source);
  if (result.kind !== 'invalid') throw new Error(`expected invalid, got ${JSON.stringify(result, null, 2)}`);
  return result;
};

export const yamlError = (source: string) => {
  const result = validateDefinition(source);
  if (result.kind !== 'yaml_error')
    throw new Error(`expected yaml_error, got ${JSON.stringify(result, null, 2)}`);
  return result.error;
};

/** The issue at a path (exactly one). */
export const at = (issues: ValidationIssue[], path: string): ValidationIssue => {
  const found = issues.filter((i) => i.path === path);
  if (found.length !== 1)
    throw new Error(`expected one issue at ${path}, got ${JSON.stringify(issues, null, 2)}`);
  return found[0];
};

export const service = (
  result: { definition: { services: ServiceDefinition[] } },
  name: string,
): ServiceDefinition => {
  const found = result.definition.services.find((s) => s.name === name);
  if (!found) throw new Error(`no service ${name}`);
  return found;
};

export const names = (result: ValidationResult): string[] =>
  result.kind === 'valid' ? result.definition.services.map((s) => s.name) : [];

/** One process service `app` with these environment lines (after `env:`, at line 7). */
export const withEnv = (envLines: string[], command = '[/bin/app]') =>
  `name: big\nstackkit: basement-kit\nservices:\n  app:\n    command: ${command}\n    env:\n${envLines.map((l) => `      ${l}\n`).join('')}`;
/** `count` variables V0, V1, ... of `size` bytes each, the last one `extra` bytes longer. */
export const variables = (count: number, size: number, extra = 0) =>
  Array.from({ length: count }, (_, i) => `V${i}: "${'x'.repeat(size + (i === count - 1 ? extra : 0))}"`);
export const specBytes = (source: string) =>
  stackSpecBytes(valid(source).definition.services.map((s) => toServiceSpec(s)));
