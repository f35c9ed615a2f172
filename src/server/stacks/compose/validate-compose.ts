import type { Catalog } from '../catalog/catalog.js';
import type { StackDefinition } from '../definition/definition.types.js';
import type { Issues } from '../definition/issues.js';
import { describe } from '../definition/node-readers.js';
import type { YamlNode } from '../definition/yaml-tree.js';
import { checkComposeSchema } from './compose-schema.js';
import { interpolateTree } from './interpolate.js';
import { translateCompose, type ComposeOptions } from './translate-compose.js';

/**
 * A Compose file, in the order `docker compose` reads one: variables interpolated over the whole
 * file first, then the Compose Specification's schema, then our rules (translate-compose.ts).
 * A file the schema refuses goes no further: its errors are the schema's, each at its node.
 */
export function validateCompose(
  root: YamlNode,
  options: ComposeOptions,
  catalog: Catalog,
  issues: Issues,
): StackDefinition | null {
  if (root.kind !== 'map') {
    issues.error(
      '',
      'invalid_value',
      `a Compose file is a mapping with services, not ${describe(root)}`,
      root.pos,
    );
    return null;
  }
  const { tree } = interpolateTree(root, options.variables, issues);
  if (issues.errors.length > 0) return null;
  if (tree.kind !== 'map' || !checkComposeSchema(tree, issues)) return null;
  return translateCompose(tree, options, catalog, issues);
}

/**
 * CONTRACT.md: a document whose top level has `services` and no `stackkit` is a Compose file;
 * anything else is ours.
 */
export function looksLikeCompose(root: YamlNode | null): boolean {
  return root?.kind === 'map' && root.entries.has('services') && !root.entries.has('stackkit');
}
