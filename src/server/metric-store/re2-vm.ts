/**
 * A linear-time matcher for Go regexp syntax trees: the tree is compiled as Go compiles it
 * (regexp/syntax Simplify and Compile: counted repeats expanded, `x*` of a nullable x as
 * `(x+)?`) and run as Go's NFA runs it (regexp/exec.go, a Pike VM): every thread advances one
 * code point at a time, at most one thread per instruction, in priority order, so a match and its
 * capture groups are the ones Go's leftmost-first matching finds, in O(text × program) time
 * whatever the pattern (re2-emit.ts says when V8's own engine is used instead).
 */
import { assertionHolds, setHas, type Assertion, type CharSet, type Node } from './re2-ast.js';
import { inRanges } from './re2-classes.js';

const FAIL = 0;
const MATCH = 1;
const CHAR = 2;
const ALT = 3;
const EMPTY = 4;
const CAPTURE = 5;
const NOP = 6;

type Kind = 'star' | 'plus' | 'quest' | 'empty' | 'other';

/** What a node simplifies to (Go's Simplify), with its greediness, for simplify1's rules. */
function simplified(node: Node): { kind: Kind; greedy: boolean } {
  if (node.op === 'empty') return { kind: 'empty', greedy: true };
  if (node.op !== 'repeat') return { kind: 'other', greedy: true };
  const { min, max, greedy } = node;
  if (max === 0) return { kind: 'empty', greedy };
  if (min === 1 && max === 1) return simplified(node.sub);
  if (max === -1) return { kind: min === 0 ? 'star' : min === 1 ? 'plus' : 'other', greedy };
  return { kind: min === 0 && max === 1 ? 'quest' : 'other', greedy };
}

function nullable(node: Node): boolean {
  switch (node.op) {
    case 'char':
      return false;
    case 'concat':
      return node.subs.every(nullable);
    case 'alternate':
      return node.subs.some(nullable);
    case 'capture':
      return nullable(node.sub);
    case 'repeat':
      return node.max === 0 || node.min === 0 || nullable(node.sub);
    case 'assert':
    case 'empty':
      return true;
  }
}

export class Program {
  readonly op: number[] = [FAIL];
  readonly out: number[] = [0];
  readonly arg: number[] = [0];
  readonly tests: ((cp: number) => boolean)[] = [];
  readonly assertions: Assertion[] = [];
  readonly start: number;
  /** The two thread queues, kept between runs: allocating them is O(program), a run may not be. */
  queues: [Queue, Queue] | undefined;

  constructor(
    root: Node,
    readonly groups: number,
  ) {
    this.start = this.compile(root, this.inst(MATCH, 0, 0));
  }

  get size(): number {
    return this.op.length;
  }

  private inst(op: number, out: number, arg: number): number {
    this.op.push(op);
    this.out.push(out);
    this.arg.push(arg);
    return this.op.length - 1;
  }

  private charTest(set: CharSet): (cp: number) => boolean {
    const { ranges } = set;
    if (set.properties.length > 0 || set.negate) return (cp) => setHas(set, cp);
    if (ranges.length === 1 && ranges[0][0] === ranges[0][1]) return (cp) => cp === ranges[0][0];
    return (cp) => inRanges(ranges, cp);
  }

  /** Instructions for `node` followed by `next`; returns the entry. */
  private compile(node: Node, next: number): number {
    switch (node.op) {
      case 'empty':
        return this.inst(NOP, next, 0);
      case 'char':
        this.tests.push(this.charTest(node.set));
        return this.inst(CHAR, next, this.tests.length - 1);
      case 'assert':
        this.assertions.push(node.kind);
        return this.inst(EMPTY, next, this.assertions.length - 1);
      case 'capture': {
        const close = this.inst(CAPTURE, next, 2 * node.index + 1);
        return this.inst(CAPTURE, this.compile(node.sub, close), 2 * node.index);
      }
      case 'concat':
        return node.subs.reduceRight((after, sub) => this.compile(sub, after), next);
      case 'alternate': {
        const entries = node.subs.map((sub) => this.compile(sub, next));
        return entries.reduceRight((rest, entry) => this.inst(ALT, entry, rest));
      }
      case 'repeat':
        return this.repeat(node, next);
    }
  }

  private repeat(node: Extract<Node, { op: 'repeat' }>, next: number): number {
    const { sub, min, max, greedy } = node;
    if (max === 0) return this.inst(NOP, next, 0);
    if (min === 1 && max === 1) return this.compile(sub, next);
    let entry: number;
    if (max === -1) {
      // x{n,} is n-1 copies of x, then x+.
      entry = this.simplify1(sub, min === 0 ? 'star' : 'plus', greedy, next);
      for (let i = 1; i < min; i++) entry = this.compile(sub, entry);
      return entry;
    }
    // x{2,5} is xx(x(x(x)?)?)?: nested optional copies, the required ones in front.
    entry = next;
    if (max > min) entry = this.simplify1(sub, 'quest', greedy, next);
    for (let i = min + 1; i < max; i++) entry = this.alt(this.compile(sub, entry), next, greedy);
    for (let i = 0; i < min; i++) entry = this.compile(sub, entry);
    return entry;
  }

  /** A choice: `preferred` first when greedy, `other` first when not. */
  private alt(preferred: number, other: number, greedy: boolean): number {
    return greedy ? this.inst(ALT, preferred, other) : this.inst(ALT, other, preferred);
  }

  /** `x*`, `x+` or `x?` with Go's simplify1: x* of an empty x is empty, x** is x*. */
  private simplify1(sub: Node, kind: 'star' | 'plus' | 'quest', greedy: boolean, next: number): number {
    const s = simplified(sub);
    if (s.kind === 'empty' || (s.kind === kind && s.greedy === greedy)) return this.compile(sub, next);
    if (kind === 'quest') return this.alt(this.compile(sub, next), next, greedy);
    // Go compiles x* of a nullable x as (x+)?, so that an empty iteration does not outrank a
    // longer one (golang.org/issue/46123).
    if (kind === 'star' && nullable(sub)) return this.alt(this.loop(sub, greedy, next, false), next, greedy);
    return this.loop(sub, greedy, next, kind === 'star');
  }

  /** Go's loop: x then a choice of x again or `next`; entered at the choice for x*, at x for x+. */
  private loop(sub: Node, greedy: boolean, next: number, star: boolean): number {
    const split = this.inst(ALT, 0, 0);
    const body = this.compile(sub, split);
    this.out[split] = greedy ? body : next;
    this.arg[split] = greedy ? next : body;
    return star ? split : body;
  }
}

/** Threads at one position: instructions in priority order, each at most once. */
class Queue {
  readonly pcs: Int32Array;
  readonly caps: (Int32Array | null)[];
  private readonly index: Int32Array;
  size = 0;

  constructor(n: number) {
    this.pcs = new Int32Array(n);
    this.caps = new Array<Int32Array | null>(n).fill(null);
    this.index = new Int32Array(n);
  }

  has(pc: number): boolean {
    const j = this.index[pc];
    return j < this.size && this.pcs[j] === pc;
  }

  push(pc: number, caps: Int32Array | null): void {
    this.index[pc] = this.size;
    this.pcs[this.size] = pc;
    this.caps[this.size++] = caps;
  }
}

const codePoint = (s: string, i: number): number => (i < s.length ? s.codePointAt(i)! : -1);

/** Instructions the NFA may still visit for one caller (a selection, a label_replace). */
export interface Budget {
  left: number;
}

/**
 * Runs the program over `text`, anchored at its start (the program asserts the rest). With
 * `withCaptures`, the capture positions of Go's match (UTF-16 offsets, -1 unset); without, an
 * empty array for a match. Null when nothing matches. Each instruction visited is taken from
 * `budget`; `exhausted` is called (and must throw) when it runs out.
 */
export function run(
  p: Program,
  text: string,
  withCaptures: boolean,
  budget: Budget,
  exhausted: () => never,
): Int32Array | null {
  const ncap = withCaptures ? 2 * p.groups : 0;
  let [runq, nextq] = (p.queues ??= [new Queue(p.size), new Queue(p.size)]);
  runq.size = 0;
  nextq.size = 0;
  const stack: number[] = [];
  let matched: Int32Array | null = null;

  /** Go's machine.add: follows empty-width instructions from pc, queueing the threads it reaches. */
  const add = (q: Queue, pc0: number, pos: number, caps: Int32Array, before: number, after: number): void => {
    stack.push(pc0);
    while (stack.length > 0) {
      const pc = stack.pop()!;
      budget.left--;
      // A negative entry restores a capture slot: -1 - slot, then the old value.
      if (pc < 0) {
        caps[-1 - pc] = stack.pop()!;
        continue;
      }
      if (pc === 0 || q.has(pc)) continue;
      const op = p.op[pc];
      if (op === ALT) {
        q.push(pc, null);
        stack.push(p.arg[pc], p.out[pc]);
      } else if (op === EMPTY) {
        q.push(pc, null);
        if (assertionHolds(p.assertions[p.arg[pc]], before, after)) stack.push(p.out[pc]);
      } else if (op === NOP) {
        q.push(pc, null);
        stack.push(p.out[pc]);
      } else if (op === CAPTURE) {
        q.push(pc, null);
        const slot = p.arg[pc];
        if (slot < ncap) {
          stack.push(caps[slot], -1 - slot, p.out[pc]);
          caps[slot] = pos;
        } else stack.push(p.out[pc]);
      } else q.push(pc, ncap > 0 ? caps.slice() : caps);
    }
  };

  const scratch = new Int32Array(ncap).fill(-1);
  if (ncap > 0) scratch[0] = 0;
  let pos = 0;
  let cp = codePoint(text, 0);
  add(runq, p.start, 0, scratch, -1, cp);
  for (;;) {
    const width = cp < 0 ? 0 : cp > 0xffff ? 2 : 1;
    const nextCp = codePoint(text, pos + width);
    for (let j = 0; j < runq.size; j++) {
      const pc = runq.pcs[j];
      const op = p.op[pc];
      if (op === MATCH) {
        matched = runq.caps[j]!;
        if (ncap > 0) matched[1] = pos;
        // Leftmost-first: threads after this one have lower priority.
        break;
      }
      if (op === CHAR && cp >= 0 && p.tests[p.arg[pc]](cp))
        add(nextq, p.out[pc], pos + width, runq.caps[j]!, cp, nextCp);
    }
    if (budget.left < 0) exhausted();
    if (width === 0 || nextq.size === 0 || (ncap === 0 && matched)) break;
    [runq, nextq] = [nextq, runq];
    nextq.size = 0;
    pos += width;
    cp = nextCp;
  }
  return matched;
}
