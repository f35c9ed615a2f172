/**
 * Go regular expressions (RE2 syntax, Go 1.19 as Prometheus 2.42 has them) for the whole metric
 * store: label matchers in storage and the engine, and label_replace. A pattern is parsed as
 * Prometheus compiles it, fully anchored (re2-parse.ts, Go's errors), then run on V8's engine
 * when that is linear for it (re2-emit.ts), else on a linear-time NFA (re2-vm.ts): RE2 never
 * backtracks, so neither may we, or a hostile `=~` could hold the event loop for ever. Compiled
 * patterns (and errors) are cached. See docs/metric-store-design.md, "Regular expressions".
 */
import { MetricInputError } from './errors.js';
import type { Node } from './re2-ast.js';
import { MAX_CP } from './re2-classes.js';
import { analyze, emitJs } from './re2-emit.js';
import { parseRe2, programSize } from './re2-parse.js';
import { Program, run, type Budget } from './re2-vm.js';

export type { Budget } from './re2-vm.js';

/**
 * The largest program (Go's instruction count) the NFA runs: its cost per code point grows with
 * the program, so a pattern that needs it and is larger is refused (Go allows ~3.3 million).
 */
export const MAX_NFA_PROGRAM = 10_000;

/**
 * NFA steps (instructions visited, 20 to 50 ns each) one caller may spend: a selection's matcher,
 * a label_replace. Linear time still grows with the program and the values; this bounds a
 * hostile pattern over many long values to a clean error after about a second of blocked loop.
 * `.*foo.*bar` takes about 80 steps for a 25-character value.
 */
export const MATCH_BUDGET = 30_000_000;

export const matchBudget = (): Budget => ({ left: MATCH_BUDGET });

export type Re2Engine = 'auto' | 'nfa' | 'js';

/** `.*` as the pattern's own: 'line' stops at \n, 'all' is `(?s).*`. */
type Dots = 'none' | 'line' | 'all';

/** A pattern that is only `[.*]literal[.*]`: tested with string search, exactly. */
interface Shortcut {
  literal: string;
  lead: Dots;
  trail: Dots;
}

function dots(node: Node): Dots | undefined {
  if (node.op !== 'repeat' || node.min !== 0 || node.max !== -1 || node.sub.op !== 'char') return undefined;
  const { ranges, properties, negate } = node.sub.set;
  if (properties.length > 0 || negate) return undefined;
  const key = JSON.stringify(ranges);
  return key === JSON.stringify([[0, MAX_CP]])
    ? 'all'
    : key ===
        JSON.stringify([
          [0, 9],
          [11, MAX_CP],
        ])
      ? 'line'
      : undefined;
}

function shortcut(root: Node): Shortcut | undefined {
  const flat = (n: Node): Node[] => (n.op === 'concat' ? n.subs.flatMap(flat) : [n]);
  const items = flat(root).slice(1, -1);
  const lead = items.length > 0 ? dots(items[0]) : undefined;
  const trail = items.length > 1 ? dots(items[items.length - 1]) : undefined;
  const middle = items.slice(lead ? 1 : 0, trail ? -1 : undefined);
  let literal = '';
  for (const n of middle) {
    if (n.op !== 'char' || n.set.properties.length > 0 || n.set.negate || n.set.ranges.length !== 1)
      return undefined;
    const [lo, hi] = n.set.ranges[0];
    if (lo !== hi) return undefined;
    literal += String.fromCodePoint(lo);
  }
  if (literal === '' || (lead === 'line' && trail === 'line' && literal.includes('\n'))) return undefined;
  return { literal, lead: lead ?? 'none', trail: trail ?? 'none' };
}

function shortcutTest({ literal, lead, trail }: Shortcut, v: string): boolean {
  const free = (dots: Dots, part: string) => dots === 'all' || (dots === 'line' && !part.includes('\n'));
  if (lead === 'none' && trail === 'none') return v === literal;
  if (lead === 'none') return v.startsWith(literal) && free(trail, v.slice(literal.length));
  if (trail === 'none') return v.endsWith(literal) && free(lead, v.slice(0, v.length - literal.length));
  // The first occurrence leaves the least before it, the last the least after it.
  const i = lead === 'line' || trail === 'all' ? v.indexOf(literal) : v.lastIndexOf(literal);
  return i >= 0 && free(lead, v.slice(0, i)) && free(trail, v.slice(i + literal.length));
}

export class Re2 {
  /** Capture group names by index ('' when unnamed; index 0 is the whole match). */
  readonly names: readonly string[];
  /** Whether test() runs on V8's backtracking engine (linear for this pattern), else on the NFA. */
  readonly backtracks: boolean;
  private readonly js: RegExp;
  private readonly program: Program | undefined;
  private readonly jsCaptures: boolean;
  private readonly shortcut: Shortcut | undefined;

  constructor(
    readonly pattern: string,
    engine: Re2Engine = 'auto',
  ) {
    const { root, names } = parseRe2(pattern);
    this.names = names;
    this.js = new RegExp(emitJs(root), 'u');
    const { linear, capturesInLoop } = analyze(root);
    this.shortcut = engine === 'auto' ? shortcut(root) : undefined;
    this.backtracks = engine === 'js' || (engine === 'auto' && linear);
    this.jsCaptures = this.backtracks && (engine === 'js' || !capturesInLoop);
    if (!this.backtracks || !this.jsCaptures) {
      const size = programSize(root);
      if (size > MAX_NFA_PROGRAM)
        throw new MetricInputError(`error parsing regexp: expression too large: \`^(?:${pattern})$\``);
      this.program = new Program(root, names.length);
    }
  }

  /** Instructions held (the cache's measure). */
  get weight(): number {
    return 1 + (this.program?.size ?? 0);
  }

  private readonly exhausted = (): never => {
    throw new MetricInputError(
      `regular expression ${JSON.stringify(this.pattern)} needs more than ${MATCH_BUDGET} steps to match; make it simpler`,
    );
  };

  /** Whether the whole value matches (NFA steps taken from `budget`). */
  test(value: string, budget: Budget = matchBudget()): boolean {
    if (this.shortcut) return shortcutTest(this.shortcut, value);
    if (this.backtracks) return this.js.test(value);
    return run(this.program!, value, false, budget, this.exhausted) !== null;
  }

  /** The whole value's match: index 0 the value, then each group's text (undefined when unset). */
  exec(value: string, budget: Budget = matchBudget()): (string | undefined)[] | null {
    if (this.jsCaptures) {
      const m = this.js.exec(value);
      return m ? Array.from(m) : null;
    }
    const caps = run(this.program!, value, true, budget, this.exhausted);
    if (caps === null) return null;
    return this.names.map((_, i) =>
      caps[2 * i] < 0 ? undefined : value.slice(caps[2 * i], caps[2 * i + 1]),
    );
  }

  /** A group by name (Go's template rule: the first group of that name that matched). */
  named(match: readonly (string | undefined)[], name: string): string | undefined {
    for (let i = 1; i < this.names.length; i++)
      if (this.names[i] === name && match[i] !== undefined) return match[i];
    return undefined;
  }
}

/** Cached patterns, oldest first out, bounded by the instructions they hold. */
const CACHE_WEIGHT = 200_000;
const cache = new Map<string, Re2 | MetricInputError>();
let cached = 0;

const weightOf = (entry: Re2 | MetricInputError): number => (entry instanceof Re2 ? entry.weight : 1);

/** The compiled pattern (cached); throws MetricInputError with Go's message for an invalid one. */
export function compileRe2(pattern: string): Re2 {
  let entry = cache.get(pattern);
  if (entry === undefined) {
    try {
      entry = new Re2(pattern);
    } catch (err) {
      if (!(err instanceof MetricInputError)) throw err;
      entry = err;
    }
    cached += weightOf(entry);
    cache.set(pattern, entry);
    for (const [key, old] of cache) {
      if (cached <= CACHE_WEIGHT || old === entry) break;
      cache.delete(key);
      cached -= weightOf(old);
    }
  }
  if (entry instanceof MetricInputError) throw entry;
  return entry;
}
