/**
 * A token-level pass before the lezer parser, where the grammar of `@prometheus-io/lezer-promql`
 * (Prometheus 3) and Prometheus 2.42 disagree: `holt_winters` (renamed
 * `double_exponential_smoothing` in 3.0, which 2.42 does not know), calls of unknown functions
 * (2.42: "unknown function with name"), and `1.e3` and `0X1F`, which lezer does not read. It also
 * bounds how deeply the query nests (MAX_NESTING), before lezer builds its tree and before anything
 * walks a tree recursively.
 */
import { PromqlParseError } from './errors.js';
import { FUNCTIONS } from './functions/signatures.js';

export const AGGREGATORS: ReadonlySet<string> = new Set([
  'sum',
  'min',
  'max',
  'avg',
  'group',
  'stddev',
  'stdvar',
  'count',
  'count_values',
  'bottomk',
  'topk',
  'quantile',
]);

/** Words 2.42's lexer reads as keywords whatever their case; a `(` may follow them. */
const KEYWORDS = new Set([
  ...AGGREGATORS,
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'bool',
  'and',
  'or',
  'unless',
  'atan2',
  'offset',
  'start',
  'end',
]);

/** Binary operators written as words (2.42 reads them in any case), and the `offset` modifier. */
const WORD_OPERATORS = new Set(['and', 'or', 'unless', 'atan2', 'offset']);

/**
 * How deeply a query may nest: every parenthesis, bracket (call, aggregation, range, subquery),
 * operator and modifier one level. lezer's tree, its own tree building (recursive), our
 * conversion, type checks and evaluator all recurse once or more per level; 500 levels keep them
 * several times below the smallest JavaScript stack that overflows (about 2,500 levels of `^`), and
 * above what lezer accepts for a chain of a left-associative operator anyway (350 to 1,150 terms,
 * its MaxLeftAssociativeReductionCount). Prometheus has no such limit (Go's stacks grow).
 */
export const MAX_NESTING = 500;

interface Level {
  /** Operators (and modifiers) so far in the current argument of this bracket. */
  ops: number;
  /** The deepest bracket closed so far in the current argument, itself included. */
  inner: number;
  /** The deepest earlier argument (before a comma). */
  best: number;
  /** Levels above this bracket's contents: enclosing brackets and the operators over them. */
  below: number;
  /** A `{...}` of label matchers: its `=`, `!=`, `=~`, `!~` are no operators. */
  matchers: boolean;
}

/**
 * An upper bound on the depth of the syntax tree a query gives, worked out in one pass over its
 * tokens without recursion: within one argument of one bracket, n operators make a tree at most n
 * deep over its deepest bracketed operand. Throws PromqlParseError where the bound passes MAX_NESTING.
 * Signs count as operators (`-1`, `1e-3`), which can only overestimate.
 */
class NestingMeter {
  private readonly levels: Level[] = [{ ops: 0, inner: 0, best: 0, below: 0, matchers: false }];

  constructor(private readonly source: string) {}

  private get top(): Level {
    return this.levels[this.levels.length - 1];
  }

  operator(at: number): void {
    const top = this.top;
    if (top.matchers) return;
    top.ops++;
    this.check(at);
  }

  open(bracket: string, at: number): void {
    const top = this.top;
    // A range or subquery bracket applies to what it follows: one more level over it.
    if (bracket === '[') this.operator(at);
    this.levels.push({
      ops: 0,
      inner: 0,
      best: 0,
      below: top.below + top.ops + 1,
      matchers: bracket === '{',
    });
    this.check(at);
  }

  close(at: number): void {
    // An unmatched closing bracket: lezer reports it.
    if (this.levels.length === 1) return;
    const done = this.levels.pop()!;
    const depth = Math.max(done.best, done.ops + done.inner) + 1;
    const top = this.top;
    top.inner = Math.max(top.inner, depth);
    this.check(at);
  }

  comma(): void {
    const top = this.top;
    top.best = Math.max(top.best, top.ops + top.inner);
    top.ops = 0;
    top.inner = 0;
  }

  private check(at: number): void {
    const top = this.top;
    if (top.below + top.ops + top.inner > MAX_NESTING)
      throw new PromqlParseError(
        `query is nested too deeply: more than ${MAX_NESTING} levels of parentheses, calls, subqueries or operators`,
        positionOf(this.source, at),
      );
  }
}

/** The name lezer knows holt_winters by. */
export const HOLT_WINTERS_ALIAS = 'double_exponential_smoothing';

export function positionOf(source: string, offset: number): { line: number; column: number } {
  const before = source.slice(0, offset);
  const line = before.split('\n').length;
  return { line, column: offset - before.lastIndexOf('\n') };
}

/**
 * The source with `holt_winters(` renamed for lezer; throws on a call of an unknown function and on
 * a query nested more than MAX_NESTING levels deep.
 */
export function prepareSource(source: string): string {
  const nesting = new NestingMeter(source);
  let out = '';
  let i = 0;
  while (i < source.length) {
    const c = source[i];
    if (c === '"' || c === "'" || c === '`') {
      const end = stringEnd(source, i);
      out += source.slice(i, end);
      i = end;
      continue;
    }
    if (c === '#') {
      const end = source.indexOf('\n', i);
      const stop = end < 0 ? source.length : end;
      out += source.slice(i, stop);
      i = stop;
      continue;
    }
    // lezer reads neither `1.e3` nor `0X1F`; 2.42 reads them as 1000 and 31.
    const number = /^(?:\d+\.(?=[eE][+-]?\d)|0X(?=[0-9a-fA-F]))/.exec(source.slice(i, i + 64));
    if (number && (i === 0 || !/[A-Za-z0-9_:.]/.test(source[i - 1]))) {
      out += number[0] === '0X' ? '0x' : `${number[0]}0`;
      i += number[0].length;
      continue;
    }
    const word = /^[A-Za-z_:][A-Za-z0-9_:]*/.exec(source.slice(i, i + 256));
    // An identifier starts only where no number or identifier character precedes it.
    if (word && (i === 0 || !/[A-Za-z0-9_:.]/.test(source[i - 1]))) {
      const name = word[0];
      const calls = /^\s*\(/.test(source.slice(i + name.length));
      if (calls && !KEYWORDS.has(name.toLowerCase()) && !FUNCTIONS.has(name))
        throw new PromqlParseError(`unknown function with name "${name}"`, positionOf(source, i));
      if (WORD_OPERATORS.has(name.toLowerCase())) nesting.operator(i);
      out += calls && name === 'holt_winters' ? HOLT_WINTERS_ALIAS : name;
      i += name.length;
      continue;
    }
    measure(nesting, source, i);
    out += c;
    i++;
  }
  return out;
}

/** Feeds the meter one character outside strings, comments and names. */
function measure(nesting: NestingMeter, source: string, i: number): void {
  const c = source[i];
  switch (c) {
    case '(':
    case '[':
    case '{':
      return nesting.open(c, i);
    case ')':
    case ']':
    case '}':
      return nesting.close(i);
    case ',':
      return nesting.comma();
    case '+':
    case '-':
    case '*':
    case '/':
    case '%':
    case '^':
    case '@':
      return nesting.operator(i);
    case '=':
    case '!':
    case '<':
    case '>':
      // A comparison is one operator however many characters it has (`==`, `!=`, `>=`...).
      if (i === 0 || !'=!<>'.includes(source[i - 1])) nesting.operator(i);
      return;
    default:
      return;
  }
}

function stringEnd(source: string, start: number): number {
  const quote = source[start];
  let i = start + 1;
  while (i < source.length && source[i] !== quote) {
    if (source[i] === '\\' && quote !== '`') i++;
    i++;
  }
  return Math.min(i + 1, source.length);
}
