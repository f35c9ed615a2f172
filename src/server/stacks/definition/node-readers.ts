import type { Issues } from './issues.js';
import type { YamlMap, YamlNode } from './yaml-tree.js';

/**
 * Reading the positioned YAML nodes of yaml-tree.ts as the values a definition field expects. A
 * node of the wrong kind is reported (at the node, by its kind, never by its value) and read as
 * nothing, so the rules go on and one pass finds every problem.
 */

export const isNull = (node: YamlNode | undefined): boolean =>
  node === undefined || (node.kind === 'scalar' && node.value === null);

/** What a node is, for messages: never its value. */
export const describe = (node: YamlNode): string =>
  node.kind === 'map'
    ? 'a mapping'
    : node.kind === 'seq'
      ? 'a list'
      : node.value === null
        ? 'empty'
        : `a ${typeof node.value}`;

const join = (path: string, key: string | number): string => (path ? `${path}.${key}` : String(key));

/** Unknown keys are warnings so older services read newer files; `x-` keys hold anchors and are silent. */
export function warnUnknownKeys(
  map: YamlMap,
  allowed: readonly string[],
  path: string,
  issues: Issues,
): void {
  for (const [key, entry] of map.entries) {
    if (allowed.includes(key) || key.startsWith('x-')) continue;
    issues.warn(join(path, key), `unknown key "${key}" is ignored`, entry.key.pos);
  }
}

/** A value that is present: neither missing nor empty. */
export function present(map: YamlMap | null | undefined, key: string): YamlNode | undefined {
  const value = map?.entries.get(key)?.value;
  return value === undefined || isNull(value) ? undefined : value;
}

/** A required key: reports it missing at its parent mapping (or at its key when empty). */
export function required(
  map: YamlMap,
  key: string,
  path: string,
  message: string,
  issues: Issues,
): YamlNode | undefined {
  const entry = map.entries.get(key);
  if (entry === undefined || isNull(entry.value)) {
    issues.error(path, 'missing_required_field', message, entry?.key.pos ?? map.pos);
    return undefined;
  }
  return entry.value;
}

/** A mapping, or null (after reporting) for anything else; an empty value reads as an empty mapping. */
export function asMap(node: YamlNode, path: string, issues: Issues, what: string): YamlMap | null {
  if (node.kind === 'map') return node;
  if (node.kind === 'scalar' && node.value === null)
    return { kind: 'map', entries: new Map(), pos: node.pos, size: 1, height: 0 };
  issues.error(path, 'invalid_value', `${what} must be a mapping, not ${describe(node)}`, node.pos);
  return null;
}

/** A string value; numbers and booleans are refused where text is expected (quote them). */
export function asString(node: YamlNode, path: string, issues: Issues, what: string): string | undefined {
  if (node.kind === 'scalar' && typeof node.value === 'string') return node.value;
  issues.error(path, 'invalid_value', `${what} must be a string, not ${describe(node)}`, node.pos);
  return undefined;
}

/** A scalar as text, as written (`8080`, `true`, `1.0`): for env values, arguments and labels. */
export function asText(node: YamlNode): string | undefined {
  if (node.kind !== 'scalar' || node.value === null) return undefined;
  return typeof node.value === 'string' ? node.value : node.text;
}

export function asBoolean(node: YamlNode, path: string, issues: Issues): boolean | undefined {
  if (node.kind === 'scalar' && typeof node.value === 'boolean') return node.value;
  const hint =
    node.kind === 'scalar' && typeof node.value === 'string' ? ' (yes/no/on/off are text in YAML 1.2)' : '';
  issues.error(
    path,
    'invalid_value',
    `${path} must be true or false, not ${describe(node)}${hint}`,
    node.pos,
  );
  return undefined;
}

/** The scalar value of a node (undefined for a collection): for the quantity parsers. */
export const scalarValue = (node: YamlNode): unknown => (node.kind === 'scalar' ? node.value : undefined);
