/**
 * A Go regexp syntax tree (re2-ast.ts) as a JavaScript RegExp source with the `u` flag and the
 * same meaning, and whether V8's backtracking engine may run it.
 *
 * V8 backtracks; RE2 does not. `linear` holds when the tree is deterministic with one code point
 * of lookahead (LL(1)): at every alternation, and between another iteration of a repetition and
 * leaving it, the choices start with disjoint code points (the end of the text counting as one),
 * and no repeated part can match empty. Then a wrong choice fails on the next code point, so
 * backtracking costs O(text × pattern). Patterns that are not (`(a+)+`, `.*x.*y`, `a|ab`) run on
 * re2-vm.ts, which is linear for every pattern. Properties (`\pL`) count as any code point.
 */
import type { CharSet, Node } from './re2-ast.js';
import { complement, emitRanges, hex, intersects, MAX_CP, normalize, type Range } from './re2-classes.js';

/**
 * A set as `u`-mode JS. (Node 20's `v` mode mis-matches a negated class at the start of a
 * repeated group, `/^(?:[^a]b)+/v` matching "ab", so no `v`.) A negated property with what folding
 * adds (`(?i)\P{Lu}`) cannot be a class member without `v`'s nesting: such a set is written with
 * lookaheads over its complement, which match one code point without any choice to backtrack to.
 */
function emitSet(set: CharSet): string {
  const [only] = set.ranges;
  if (set.ranges.length === 1 && only[0] === only[1] && set.properties.length === 0 && !set.negate)
    return hex(only[0]);
  let members = emitRanges(set.ranges);
  const excluded: string[] = [];
  for (const p of set.properties) {
    if (p.extra.length === 0) members += `\\${p.negate ? 'P' : 'p'}{${p.name}}`;
    else if (!p.negate) members += `\\p{${p.name}}${emitRanges(p.extra)}`;
    else excluded.push(`[\\p{${p.name}}${emitRanges(p.extra)}]`);
  }
  if (excluded.length === 0) return `[${set.negate ? '^' : ''}${members}]`;
  // The code points outside the set's union: in every excluded set and not among the members.
  const outside = `(?![${members}])${excluded
    .slice(1)
    .map((e) => `(?=${e})`)
    .join('')}${excluded[0]}`;
  return set.negate ? `(?:${outside})` : `(?:(?!${outside})[\\u{0}-\\u{10ffff}])`;
}

const ASSERTIONS = {
  beginText: '^',
  endText: '$',
  beginLine: '(?<![^\\n])',
  endLine: '(?![^\\n])',
  wordBoundary: '\\b',
  noWordBoundary: '\\B',
} as const;

/** The JS source (for the `u` flag, no other) of a tree. */
export function emitJs(node: Node): string {
  switch (node.op) {
    case 'empty':
      return '(?:)';
    case 'char':
      return emitSet(node.set);
    case 'assert':
      return ASSERTIONS[node.kind];
    case 'concat':
      return node.subs.map(emitJs).join('');
    case 'alternate':
      return `(?:${node.subs.map(emitJs).join('|')})`;
    case 'capture':
      return `(${emitJs(node.sub)})`;
    case 'repeat': {
      const sub = emitJs(node.sub);
      const atom =
        node.sub.op === 'char' || node.sub.op === 'capture' || node.sub.op === 'alternate'
          ? sub
          : `(?:${sub})`;
      let quant: string;
      if (!node.counted) quant = node.max === 1 ? '?' : node.min === 1 ? '+' : '*';
      else if (node.max === node.min) quant = `{${node.min}}`;
      else quant = `{${node.min},${node.max < 0 ? '' : node.max}}`;
      return atom + quant + (node.greedy ? '' : '?');
    }
  }
}

interface Info {
  first: Range[];
  nullable: boolean;
}

/** The end of the text, as a code point no character has. */
const END: Range[] = [[-1, -1]];
const union = (a: Range[], b: Range[]): Range[] =>
  a.length === 0 ? b : b.length === 0 ? a : normalize([...a, ...b]);

class Analysis {
  private readonly infos = new Map<Node, Info>();
  linear = true;
  capturesInLoop = false;

  info(node: Node): Info {
    let info = this.infos.get(node);
    if (info !== undefined) return info;
    switch (node.op) {
      case 'empty':
      case 'assert':
        info = { first: [], nullable: true };
        break;
      case 'char': {
        const { ranges, properties, negate } = node.set;
        const first = properties.length > 0 ? [[0, MAX_CP] as Range] : negate ? complement(ranges) : ranges;
        info = { first, nullable: false };
        break;
      }
      case 'concat': {
        let first: Range[] = [];
        let nullable = true;
        for (const sub of node.subs) {
          if (!nullable) break;
          const s = this.info(sub);
          first = union(first, s.first);
          nullable = s.nullable;
        }
        info = { first, nullable };
        break;
      }
      case 'alternate':
        info = node.subs.reduce<Info>(
          (acc, sub) => {
            const s = this.info(sub);
            return { first: union(acc.first, s.first), nullable: acc.nullable || s.nullable };
          },
          { first: [], nullable: false },
        );
        break;
      case 'capture':
        info = this.info(node.sub);
        break;
      case 'repeat': {
        const s = this.info(node.sub);
        info =
          node.max === 0
            ? { first: [], nullable: true }
            : { first: s.first, nullable: node.min === 0 || s.nullable };
      }
    }
    this.infos.set(node, info);
    return info;
  }

  /** Checks the choices inside `node`, which `follow` may come after. */
  check(node: Node, follow: Range[], inLoop: boolean): void {
    switch (node.op) {
      case 'capture':
        if (inLoop) this.capturesInLoop = true;
        this.check(node.sub, follow, inLoop);
        return;
      case 'concat': {
        let after = follow;
        for (let i = node.subs.length - 1; i >= 0; i--) {
          this.check(node.subs[i], after, inLoop);
          const s = this.info(node.subs[i]);
          after = s.nullable ? union(s.first, after) : s.first;
        }
        return;
      }
      case 'alternate': {
        let seen: Range[] = [];
        for (const sub of node.subs) {
          const s = this.info(sub);
          const lookahead = s.nullable ? union(s.first, follow) : s.first;
          if (intersects(seen, lookahead)) this.linear = false;
          seen = union(seen, lookahead);
          this.check(sub, follow, inLoop);
        }
        return;
      }
      case 'repeat': {
        if (node.max === 0) return;
        const s = this.info(node.sub);
        if (node.max !== node.min && (s.nullable || intersects(s.first, follow))) this.linear = false;
        const again = node.max !== 1;
        this.check(node.sub, again ? union(s.first, follow) : follow, inLoop || again);
        return;
      }
      case 'char':
      case 'assert':
      case 'empty':
        return;
    }
  }
}

/**
 * `linear`: V8 runs the tree in linear time (see above). `capturesInLoop`: a capture group sits
 * inside a repetition, where JS forgets a group's match on each iteration and Go keeps the last
 * one, so captures must come from re2-vm.ts.
 */
export function analyze(root: Node): { linear: boolean; capturesInLoop: boolean } {
  const a = new Analysis();
  a.check(root, END, false);
  return { linear: a.linear, capturesInLoop: a.capturesInLoop };
}
