import {
  MAX_ENV_NAME_BYTES,
  MAX_ENV_PER_SERVICE,
  MAX_ENV_VALUE_BYTES,
  utf8Bytes,
} from '../../../contracts/agent-protocol/limits.js';
import type { Issues } from './issues.js';
import { asMap, asText, describe } from './node-readers.js';
import type { YamlNode } from './yaml-tree.js';

/** The `env` of a service: names and values within what a job can carry to an agent. */

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** A whole value `${NAME}`: the agent resolves it from its own environment. */
export const ENV_REF = /^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$/;

export function readEnv(node: YamlNode | undefined, path: string, issues: Issues): Record<string, string> {
  const env: Record<string, string> = {};
  if (node === undefined) return env;
  const map = asMap(node, path, issues, 'env');
  if (map === null) return env;
  let count = 0;
  for (const [key, entry] of map.entries) {
    const keyPath = `${path}.${key}`;
    if (count++ === MAX_ENV_PER_SERVICE) {
      // One error at the first variable too many, not one per variable past the limit.
      issues.error(
        keyPath,
        'resource_constraint',
        `a service may have at most ${MAX_ENV_PER_SERVICE} environment variables; this is variable ${MAX_ENV_PER_SERVICE + 1} of ${map.entries.size}`,
        entry.key.pos,
      );
      break;
    }
    if (!ENV_NAME.test(key)) {
      issues.error(
        keyPath,
        'invalid_value',
        'environment variable names are letters, digits and "_", not starting with a digit',
        entry.key.pos,
      );
      continue;
    }
    if (utf8Bytes(key) > MAX_ENV_NAME_BYTES) {
      issues.error(
        keyPath,
        'resource_constraint',
        `environment variable names are at most ${MAX_ENV_NAME_BYTES} bytes; this one has ${utf8Bytes(key)}`,
        entry.key.pos,
      );
      continue;
    }
    const text = asText(entry.value);
    if (text === undefined) {
      issues.error(
        keyPath,
        'invalid_value',
        entry.value.kind === 'scalar'
          ? 'give the variable a value (use "" for an empty string)'
          : `an environment value is a string or a number, not ${describe(entry.value)}`,
        entry.value.pos,
      );
      continue;
    }
    if (utf8Bytes(text) > MAX_ENV_VALUE_BYTES) {
      issues.error(
        keyPath,
        'resource_constraint',
        `an environment value may take at most ${MAX_ENV_VALUE_BYTES} bytes (UTF-8); this one takes ${utf8Bytes(text)}`,
        entry.value.pos,
      );
      continue;
    }
    if (!ENV_REF.test(text) && text.includes('${')) {
      issues.warn(
        keyPath,
        'only a whole value of the form ${NAME} is resolved from the agent environment; this value is passed literally',
        entry.value.pos,
      );
    }
    env[key] = text;
  }
  return env;
}
