/** The syntax tree of a Go regexp (re2-parse.ts builds it; re2-emit.ts and re2-vm.ts run it). */
import { inRanges, type Range } from './re2-classes.js';

/** A Unicode property (JS name) with what case folding adds; `negate` inverts both together. */
export interface Property {
  name: string;
  extra: Range[];
  negate: boolean;
}

/** The code points one step may consume: ranges and properties, all inverted by `negate`. */
export interface CharSet {
  ranges: Range[];
  properties: Property[];
  negate: boolean;
}

export type Assertion = 'beginText' | 'endText' | 'beginLine' | 'endLine' | 'wordBoundary' | 'noWordBoundary';

export type Node =
  | { op: 'empty' }
  | { op: 'char'; set: CharSet }
  | { op: 'assert'; kind: Assertion }
  | { op: 'concat'; subs: Node[] }
  | { op: 'alternate'; subs: Node[] }
  /** `*` `+` `?` (counted false) or `{min,max}`; max -1 for no upper bound. */
  | { op: 'repeat'; sub: Node; min: number; max: number; greedy: boolean; counted: boolean }
  | { op: 'capture'; sub: Node; index: number; name: string };

const propertyTests = new Map<string, RegExp>();

/** Whether the set holds the code point (properties are tested with the JS engine). */
export function setHas(set: CharSet, cp: number): boolean {
  let hit = inRanges(set.ranges, cp);
  for (let i = 0; !hit && i < set.properties.length; i++) {
    const p = set.properties[i];
    let re = propertyTests.get(p.name);
    if (re === undefined) propertyTests.set(p.name, (re = new RegExp(`^\\p{${p.name}}$`, 'u')));
    hit = (re.test(String.fromCodePoint(cp)) || inRanges(p.extra, cp)) !== p.negate;
  }
  return hit !== set.negate;
}

const WORD = /[0-9A-Za-z_]/;

export const isWordChar = (cp: number): boolean => cp >= 0 && cp < 0x80 && WORD.test(String.fromCharCode(cp));

/** Go's EmptyOpContext: whether an assertion holds between code points `before` and `after` (-1 at the ends). */
export function assertionHolds(kind: Assertion, before: number, after: number): boolean {
  switch (kind) {
    case 'beginText':
      return before < 0;
    case 'endText':
      return after < 0;
    case 'beginLine':
      return before < 0 || before === 10;
    case 'endLine':
      return after < 0 || after === 10;
    case 'wordBoundary':
      return isWordChar(before) !== isWordChar(after);
    case 'noWordBoundary':
      return isWordChar(before) === isWordChar(after);
  }
}
