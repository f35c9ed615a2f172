/**
 * The engine's own syntax tree: what `parse.ts` builds from the lezer tree, after Prometheus 2.42's
 * parser rules and static type checks. Durations and times are integer milliseconds.
 */
import type { Matcher } from '../series.js';

export type ValueType = 'scalar' | 'vector' | 'matrix' | 'string';

export type ArithmeticOp = '+' | '-' | '*' | '/' | '%' | '^' | 'atan2';
export type ComparisonOp = '==' | '!=' | '>' | '<' | '>=' | '<=';
export type SetOp = 'and' | 'or' | 'unless';
export type BinaryOp = ArithmeticOp | ComparisonOp | SetOp;

export type AggregateOp =
  | 'sum'
  | 'min'
  | 'max'
  | 'avg'
  | 'group'
  | 'stddev'
  | 'stdvar'
  | 'count'
  | 'count_values'
  | 'bottomk'
  | 'topk'
  | 'quantile';

/** `@ <time>` as written: a time in milliseconds, or the query's start or end. */
export type AtModifier = number | 'start' | 'end';

export type Cardinality = 'one-to-one' | 'many-to-one' | 'one-to-many' | 'many-to-many';

export interface VectorMatching {
  card: Cardinality;
  /** `on(...)` when true, `ignoring(...)` (or nothing) when false. */
  on: boolean;
  labels: string[];
  /** The extra labels of `group_left(...)` / `group_right(...)`. */
  include: string[];
}

export interface NumberLiteral {
  type: 'number';
  value: number;
}
export interface StringLiteral {
  type: 'string';
  value: string;
}
export interface ParenExpr {
  type: 'paren';
  expr: Expr;
}
export interface UnaryExpr {
  type: 'unary';
  op: '+' | '-';
  expr: Expr;
}
export interface BinaryExpr {
  type: 'binary';
  op: BinaryOp;
  lhs: Expr;
  rhs: Expr;
  returnBool: boolean;
  /** Only between two instant vectors; null otherwise, as in Prometheus. */
  matching: VectorMatching | null;
}
export interface AggregateExpr {
  type: 'aggregate';
  op: AggregateOp;
  expr: Expr;
  param: Expr | null;
  grouping: string[];
  without: boolean;
}
export interface Call {
  type: 'call';
  func: string;
  args: Expr[];
}
export interface VectorSelector {
  type: 'vectorSelector';
  /** The metric name written before the braces, or ''. */
  name: string;
  matchers: Matcher[];
  offset: number;
  at: AtModifier | null;
}
export interface MatrixSelector {
  type: 'matrixSelector';
  selector: VectorSelector;
  range: number;
}
export interface SubqueryExpr {
  type: 'subquery';
  expr: Expr;
  range: number;
  /** 0: the engine's default subquery step. */
  step: number;
  offset: number;
  at: AtModifier | null;
}

export type Expr =
  | NumberLiteral
  | StringLiteral
  | ParenExpr
  | UnaryExpr
  | BinaryExpr
  | AggregateExpr
  | Call
  | VectorSelector
  | MatrixSelector
  | SubqueryExpr;

export function isComparison(op: BinaryOp): op is ComparisonOp {
  return op === '==' || op === '!=' || op === '>' || op === '<' || op === '>=' || op === '<=';
}

export function isSetOp(op: BinaryOp): op is SetOp {
  return op === 'and' || op === 'or' || op === 'unless';
}

/** The operators after which Prometheus drops the metric name (shouldDropMetricName in 2.42). */
export function dropsMetricName(op: BinaryOp): boolean {
  return op === '+' || op === '-' || op === '*' || op === '/' || op === '%' || op === '^';
}

export function unwrapParens(e: Expr): Expr {
  while (e.type === 'paren') e = e.expr;
  return e;
}

/** A string argument's value, through parentheses (stringFromArg). */
export function stringArg(e: Expr): string {
  const u = unwrapParens(e);
  return u.type === 'string' ? u.value : '';
}
