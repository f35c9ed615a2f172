import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { describe } from '../definition/node-readers.js';
import type { Issues } from '../definition/issues.js';
import type { ValidationCategory } from '../definition/definition.types.js';
import type { Position, YamlNode } from '../definition/yaml-tree.js';
import composeSpec from './compose-spec.json' with { type: 'json' };

/**
 * Validation of a Compose file's tree against the Compose Specification's JSON schema
 * (compose-spec.json beside this module, pinned from the compose-spec repository: see
 * compose-spec.SOURCE.md). ajv's errors become issues with the tree's paths and positions, in
 * plain words, never quoting a value of the file; the schema's many oneOf (short and long syntax)
 * are collapsed to one clear problem each.
 */

/** JSON values as the schema sees them. */
export type Plain = string | number | boolean | null | Plain[] | { [key: string]: Plain };

/**
 * The tree as plain JSON values; a `__proto__` key is an own property like any other (ajv's deep
 * equality, for uniqueItems, needs ordinary objects). Shared subtrees (aliases) stay shared.
 */
export function toPlain(node: YamlNode, seen = new WeakMap<YamlNode, Plain>()): Plain {
  if (node.kind === 'scalar') return node.value;
  const known = seen.get(node);
  if (known !== undefined) return known;
  let out: Plain;
  if (node.kind === 'seq') {
    out = node.items.map((item) => toPlain(item, seen));
  } else {
    const obj: { [key: string]: Plain } = {};
    for (const [key, entry] of node.entries) {
      const value = toPlain(entry.value, seen);
      // An own property even for "__proto__", whose assignment would set the prototype instead.
      if (key === '__proto__') Object.defineProperty(obj, key, { value, enumerable: true, writable: true });
      else obj[key] = value;
    }
    out = obj;
  }
  seen.set(node, out);
  return out;
}

let compiled: ValidateFunction | undefined;

/** Compiled once, on first use (about 200 ms). */
function validator(): ValidateFunction {
  if (compiled === undefined) {
    // The file names its draft as https://json-schema.org/draft-07/schema, which ajv knows only as
    // http://json-schema.org/draft-07/schema#; ajv's default draft is draft-07 anyway.
    const { $schema: _draft, ...schema } = composeSpec as Record<string, unknown>;
    // strict off: the schema uses union types with keywords of one of them (type [boolean, object]
    // with properties), which strict mode refuses. verbose: the failing schema, for messages.
    const ajv = new Ajv({ allErrors: true, strict: false, verbose: true });
    compiled = ajv.compile(schema);
  }
  return compiled;
}

const decode = (segment: string): string => segment.replace(/~1/g, '/').replace(/~0/g, '~');

const segmentsOf = (instancePath: string): string[] =>
  instancePath === '' ? [] : instancePath.slice(1).split('/').map(decode);

interface Located {
  /** The node at the path, or the deepest one found. */
  node: YamlNode;
  /** Position of the last segment's key when the node is a mapping entry. */
  keyPos: Position | null;
}

function locate(root: YamlNode, segments: readonly string[]): Located {
  let node = root;
  let keyPos: Position | null = null;
  for (const segment of segments) {
    if (node.kind === 'map') {
      const entry = node.entries.get(segment);
      if (entry === undefined) break;
      node = entry.value;
      keyPos = entry.key.pos;
    } else if (node.kind === 'seq') {
      const item = node.items[Number(segment)];
      if (item === undefined) break;
      node = item;
      keyPos = null;
    } else break;
  }
  return { node, keyPos };
}

/** One problem, before it is reported. */
interface Finding {
  segments: string[];
  category: ValidationCategory;
  message: string;
  /** Where to report: a key's position (unknown keys) or the node's. */
  at: 'key' | 'node' | 'parent';
  /** For collapsing: a `type` mismatch at its own path, with the types it wanted. */
  types?: string[];
}

const TYPE_WORDS: Record<string, string> = {
  object: 'a mapping',
  array: 'a list',
  string: 'a string',
  number: 'a number',
  integer: 'an integer',
  boolean: 'true or false',
  null: 'empty',
};

const orList = (words: string[]): string =>
  words.length <= 1 ? (words[0] ?? '') : `${words.slice(0, -1).join(', ')} or ${words.at(-1)}`;

const typeMessage = (types: string[], node: YamlNode): string => {
  // "integer" is within "number": say number once.
  const wanted = types.includes('number') ? types.filter((t) => t !== 'integer') : types;
  const words = [...new Set(wanted.map((t) => TYPE_WORDS[t] ?? t))];
  return `must be ${orList(words)}, not ${describe(node)}`;
};

const keyName = (segments: readonly string[]): string => {
  const last = segments.at(-1);
  if (last === undefined) return 'the file';
  return /^\d+$/.test(last) && segments.length > 1 ? `item ${last} of ${segments.at(-2)}` : last;
};

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function finding(error: ErrorObject, root: YamlNode): Finding {
  const segments = segmentsOf(error.instancePath);
  const { node } = locate(root, segments);
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case 'additionalProperties': {
      const key = String(params.additionalProperty);
      const parent: unknown = error.parentSchema;
      const patterns = isRecord(parent) ? parent.patternProperties : undefined;
      const names = isRecord(patterns) ? Object.keys(patterns).filter((p) => p !== '^x-') : [];
      if (names.length > 0) {
        const services = segments.length === 1 && segments[0] === 'services';
        return {
          segments: [...segments, key],
          category: services ? 'invalid_service_name' : 'invalid_value',
          message: `the name ${JSON.stringify(key)} is not accepted here: it must match ${names.join(' or ')}`,
          at: 'key',
        };
      }
      return {
        segments: [...segments, key],
        category: 'invalid_value',
        message: `unknown key ${key} (not in the Compose Specification)`,
        at: 'key',
      };
    }
    case 'required': {
      const missing = String(params.missingProperty);
      return {
        segments: [...segments, missing],
        category: 'missing_required_field',
        message: `${keyName(segments)} needs the key ${missing}`,
        at: 'parent',
      };
    }
    case 'type': {
      const types = String(params.type).split(',');
      return { segments, category: 'invalid_value', message: typeMessage(types, node), at: 'node', types };
    }
    case 'enum': {
      const allowed = (params.allowedValues as unknown[]).map((v) => String(v));
      return {
        segments,
        category: 'invalid_value',
        message: `must be one of: ${allowed.join(', ')}`,
        at: 'node',
      };
    }
    case 'pattern':
      return {
        segments,
        category: 'invalid_value',
        message: `is not an accepted value: it must match ${String(params.pattern)}`,
        at: 'node',
      };
    case 'minimum':
    case 'exclusiveMinimum':
      return {
        segments,
        category: 'invalid_value',
        message: `must be at least ${String(params.limit)}`,
        at: 'node',
      };
    case 'maximum':
    case 'exclusiveMaximum':
      return {
        segments,
        category: 'invalid_value',
        message: `must be at most ${String(params.limit)}`,
        at: 'node',
      };
    case 'uniqueItems':
      return {
        segments: [...segments, String(params.j)],
        category: 'invalid_value',
        message: `repeats item ${String(params.i)} of ${keyName(segments)}: items must be unique`,
        at: 'node',
      };
    case 'oneOf':
    case 'anyOf':
      return {
        segments,
        category: 'invalid_value',
        message: `matches more than one accepted form of ${keyName(segments)}`,
        at: 'node',
      };
    default:
      // ajv's own words name the keyword and the schema's limits, never the instance's value.
      return {
        segments,
        category: 'invalid_value',
        message: error.message ?? 'does not match the Compose Specification',
        at: 'node',
      };
  }
}

const isUnder = (segments: readonly string[], prefix: readonly string[]): boolean =>
  segments.length >= prefix.length && prefix.every((s, i) => segments[i] === s);

/** How deep a finding points: an unknown key points below the mapping that holds it. */
const depth = (f: Finding): number => f.segments.length;

/**
 * One oneOf/anyOf failure at `segments`, from the findings of its branches (all under it). When a
 * branch got further than the value's kind (an error below the value: a bad key, a bad item), the
 * deepest findings are the problem; when every branch refused the value's kind, one message lists
 * the kinds; otherwise one message says the value matches none of the forms.
 */
function collapse(segments: string[], branches: Finding[], node: YamlNode): Finding[] {
  if (branches.length === 0) {
    return [
      {
        segments,
        category: 'invalid_value',
        message: `matches more than one accepted form of ${keyName(segments)}`,
        at: 'node',
      },
    ];
  }
  const deepest = Math.max(...branches.map(depth));
  if (deepest > segments.length) return branches.filter((f) => depth(f) === deepest);
  if (branches.every((f) => f.types !== undefined)) {
    const types = [...new Set(branches.flatMap((f) => f.types ?? []))];
    return [{ segments, category: 'invalid_value', message: typeMessage(types, node), at: 'node', types }];
  }
  return [
    {
      segments,
      category: 'invalid_value',
      message: `does not match any accepted form of ${keyName(segments)}`,
      at: 'node',
    },
  ];
}

/**
 * Validates a Compose file's tree against the Compose Specification. Each problem becomes an
 * error: the path dotted (`services.web.ports.0`; an unknown key's path ends with the key), the
 * position of that node (of the key for an unknown key, of the mapping for a missing key), the
 * category `invalid_value` (`missing_required_field` for a missing key, `invalid_service_name` for
 * a service name the schema refuses). Returns true when the file is valid.
 */
export function checkComposeSchema(root: YamlNode, issues: Issues): boolean {
  const validate = validator();
  if (validate(toPlain(root))) return true;
  // ajv lists a oneOf's branch errors before the oneOf's own error: collapse as they come, inner
  // ones first, so an outer oneOf sees its inner ones already collapsed.
  let findings: Finding[] = [];
  for (const error of validate.errors ?? []) {
    if (error.keyword === 'oneOf' || error.keyword === 'anyOf') {
      const segments = segmentsOf(error.instancePath);
      const branches = findings.filter((f) => isUnder(f.segments, segments));
      findings = findings.filter((f) => !isUnder(f.segments, segments));
      findings.push(...collapse(segments, branches, locate(root, segments).node));
      continue;
    }
    findings.push(finding(error, root));
  }
  const reported = new Set<string>();
  for (const f of findings) {
    const path = f.segments.join('.');
    const key = `${path}\n${f.message}`;
    if (reported.has(key)) continue;
    reported.add(key);
    let pos: Position;
    if (f.at === 'parent') pos = locate(root, f.segments.slice(0, -1)).node.pos;
    else {
      const { node, keyPos } = locate(root, f.segments);
      pos = f.at === 'key' && keyPos !== null ? keyPos : node.pos;
    }
    issues.error(path, f.category, f.message, pos);
  }
  return false;
}
