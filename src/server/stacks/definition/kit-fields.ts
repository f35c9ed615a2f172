import { kitNames, type Catalog, type StackKitVariant } from '../catalog/catalog.js';
import type { Issues } from './issues.js';
import { asString, present, required } from './node-readers.js';
import type { Position, YamlMap } from './yaml-tree.js';

/**
 * The file's `stackkit` and `variant`. The variant is null when either is missing or unknown (the
 * file is then invalid already): the rules that check against its limits skip it.
 */
export interface KitChoice {
  kitName: string;
  variantName: string;
  variant: StackKitVariant | null;
}

/** How messages name the chosen variant. */
export const variantLabel = (kit: KitChoice): string => `variant ${kit.kitName}/${kit.variantName}`;

export function readKitChoice(top: YamlMap, catalog: Catalog, issues: Issues): KitChoice {
  const supported = kitNames(catalog).join(', ');
  const kitNode = required(
    top,
    'stackkit',
    'stackkit',
    `stackkit is required; supported stack kits: ${supported}`,
    issues,
  );
  const variantNode = present(top, 'variant');
  const variantName = variantNode ? asString(variantNode, 'variant', issues, 'variant') : 'default';
  if (kitNode === undefined) return { kitName: '', variantName: 'default', variant: null };
  const kitName = asString(kitNode, 'stackkit', issues, 'stackkit');
  if (kitName === undefined) return { kitName: '', variantName: 'default', variant: null };
  return chooseKit(
    { value: kitName, pos: kitNode.pos },
    variantName === undefined ? undefined : { value: variantName, pos: variantNode?.pos ?? null },
    { kit: 'stackkit', variant: 'variant' },
    catalog,
    issues,
  );
}

/**
 * The kit and variant by name, wherever the names came from (the file's keys, a Compose file's
 * `x-stackkit`, the request); `paths` are where errors point. An undefined variant was already
 * reported unreadable.
 */
export function chooseKit(
  kit: { value: string; pos: Position | null },
  variant: { value: string; pos: Position | null } | undefined,
  paths: { kit: string; variant: string },
  catalog: Catalog,
  issues: Issues,
): KitChoice {
  const choice: KitChoice = { kitName: '', variantName: 'default', variant: null };
  const supported = kitNames(catalog).join(', ');
  const found = catalog.kits.get(kit.value);
  if (found === undefined) {
    issues.error(
      paths.kit,
      'unsupported_stackkit',
      `stack kit "${kit.value.slice(0, 63)}" is not supported; supported stack kits: ${supported}`,
      kit.pos,
    );
    return choice;
  }
  choice.kitName = kit.value;
  if (variant === undefined) return choice;
  const chosen = found.variants.get(variant.value);
  if (chosen === undefined) {
    issues.error(
      paths.variant,
      'unsupported_stackkit',
      `stack kit ${kit.value} has no variant "${variant.value.slice(0, 63)}"; its variants: ${[...found.variants.keys()].sort().join(', ')}`,
      variant.pos,
    );
    return choice;
  }
  choice.variantName = variant.value;
  choice.variant = chosen;
  return choice;
}
