import { ValidationFailedError } from '../../common/app-error.js';
import type { ProblemFieldError } from '../../../contracts/api/problem.js';
import type { DefinitionOptions } from './validate-definition.js';

/**
 * A definition as a write path receives it (CONTRACT.md, "Compose files"): the YAML text, and how to
 * read it. HTTP builds one from an `application/yaml` body and the query (`format`, `name`,
 * `stackkit`, `variant`, `profiles`), or from an `application/json` body `{definition, variables,
 * profiles}`; MCP tools from their arguments.
 */
export interface DefinitionRequest {
  source: string;
  options: Omit<DefinitionOptions, 'defaultStackkit'>;
}

const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const PROFILE = /^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/;
const MAX_VARIABLES = 1000;
const MAX_VARIABLE_BYTES = 64 * 1024;
const MAX_PROFILES = 100;
const QUERY_KEYS = ['format', 'name', 'stackkit', 'variant', 'profiles'];
const BODY_KEYS = ['definition', 'variables', 'profiles'];

/** The request's reading of `body` (a YAML string or a parsed JSON object) and `query`; throws a 422 naming each bad part. */
export function definitionRequest(body: unknown, query: Record<string, unknown>): DefinitionRequest {
  const errors: ProblemFieldError[] = [];
  const bad = (path: string, message: string) => errors.push({ path, message, category: 'invalid_value' });
  const text = (key: string): string | undefined => {
    const value = query[key];
    if (value === undefined) return undefined;
    if (typeof value !== 'string' || value === '' || value.length > 253) {
      bad(`query.${key}`, `${key} is one non-empty value of at most 253 characters`);
      return undefined;
    }
    return value;
  };
  const options: DefinitionRequest['options'] = {};
  const format = text('format');
  if (format !== undefined) {
    if (format === 'compose' || format === 'stack') options.format = format;
    else bad('query.format', 'format is compose or stack');
  }
  for (const key of ['name', 'stackkit', 'variant'] as const) {
    const value = text(key);
    if (value !== undefined) options[key] = value;
  }
  const profilesText = text('profiles');
  if (profilesText !== undefined)
    options.profiles = profileList(profilesText.split(','), 'query.profiles', bad);
  for (const key of Object.keys(query)) {
    if (!QUERY_KEYS.includes(key)) bad(`query.${key}`, `${key} is not a parameter of this operation`);
  }

  let source = '';
  if (typeof body === 'string') source = body;
  else if (body !== null && typeof body === 'object' && !Array.isArray(body)) {
    const fields = body as Record<string, unknown>;
    for (const key of Object.keys(fields)) {
      if (!BODY_KEYS.includes(key))
        bad(key, `${key} is not a field of this body (definition, variables, profiles)`);
    }
    if (typeof fields.definition === 'string') source = fields.definition;
    else bad('definition', 'definition is required: the YAML text of the stack definition or Compose file');
    if (fields.variables !== undefined) options.variables = variables(fields.variables, bad);
    if (fields.profiles !== undefined) {
      if (options.profiles !== undefined) bad('profiles', 'give profiles in the body or the query, not both');
      else if (Array.isArray(fields.profiles))
        options.profiles = profileList(fields.profiles, 'profiles', bad);
      else bad('profiles', 'profiles is a list of profile names');
    }
  }
  if (errors.length > 0) {
    throw new ValidationFailedError(
      errors,
      `The request has ${errors.length} ${errors.length === 1 ? 'error' : 'errors'}.`,
    );
  }
  return { source, options };
}

function profileList(
  values: unknown[],
  path: string,
  bad: (path: string, message: string) => void,
): string[] {
  if (values.length > MAX_PROFILES) {
    bad(path, `at most ${MAX_PROFILES} profiles`);
    return [];
  }
  const profiles: string[] = [];
  values.forEach((value, i) => {
    if (typeof value === 'string' && PROFILE.test(value) && value.length <= 64) profiles.push(value);
    else bad(`${path}.${i}`, 'a profile name is 1-64 of letters, digits, "_", "." and "-"');
  });
  return profiles;
}

function variables(value: unknown, bad: (path: string, message: string) => void): Record<string, string> {
  const result: Record<string, string> = {};
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    bad('variables', 'variables is an object of NAME: "value"');
    return result;
  }
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length > MAX_VARIABLES) {
    bad('variables', `at most ${MAX_VARIABLES} variables`);
    return result;
  }
  for (const [name, v] of entries) {
    if (!VARIABLE_NAME.test(name) || name.length > 256)
      bad(
        `variables.${name.slice(0, 64)}`,
        'a variable name is letters, digits and "_", not starting with a digit',
      );
    else if (typeof v !== 'string') bad(`variables.${name}`, 'a variable value is a string');
    else if (Buffer.byteLength(v, 'utf8') > MAX_VARIABLE_BYTES)
      bad(`variables.${name}`, `a variable value may take at most ${MAX_VARIABLE_BYTES} bytes`);
    else result[name] = v;
  }
  return result;
}
