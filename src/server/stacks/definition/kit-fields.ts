import { kitNames, type Catalog, type StackKitVariant } from '../catalog/catalog.js';
import type { Issues } from './issues.js';
import { asString, present, required } from './node-readers.js';
import type { YamlMap } from './yaml-tree.js';

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
  const choice: KitChoice = { kitName: '', variantName: 'default', variant: null };
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
  if (kitNode === undefined) return choice;
  const kitName = asString(kitNode, 'stackkit', issues, 'stackkit');
  if (kitName === undefined) return choice;
  const kit = catalog.kits.get(kitName);
  if (kit === undefined) {
    issues.error(
      'stackkit',
      'unsupported_stackkit',
      `stack kit "${kitName.slice(0, 63)}" is not supported; supported stack kits: ${supported}`,
      kitNode.pos,
    );
    return choice;
  }
  choice.kitName = kitName;
  if (variantName === undefined) return choice;
  const variant = kit.variants.get(variantName);
  if (variant === undefined) {
    issues.error(
      'variant',
      'unsupported_stackkit',
      `stack kit ${kitName} has no variant "${variantName.slice(0, 63)}"; its variants: ${[...kit.variants.keys()].sort().join(', ')}`,
      variantNode?.pos ?? null,
    );
    return choice;
  }
  choice.variantName = variantName;
  choice.variant = variant;
  return choice;
}
