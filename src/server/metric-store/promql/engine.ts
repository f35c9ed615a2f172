/**
 * The PromQL engine's entry points: instant and range queries over a Queryable. Each selector is
 * read once, over every time the query can look at it (lookback, offsets, @, subquery ranges);
 * evaluation then runs in memory (evaluator.ts). Times are milliseconds since the epoch.
 */
import type { Expr, VectorSelector } from './ast.js';
import { valueType, documentedType } from './check.js';
import { PromqlBadQueryError, PromqlExecutionError } from './errors.js';
import { Evaluator, subquerySteps } from './evaluator.js';
import { compareLabels } from '../labels.js';
import { parseExpr } from './parse.js';
import { QueryContext, type Matrix, type StoredSeries } from './values.js';
import type { LabelSet, Queryable } from '../series.js';

export interface QueryOptions {
  /** How far back an instant selector looks for a sample (Prometheus's --query.lookback-delta). */
  lookbackDelta?: number;
  /** A subquery's step when it gives none (Prometheus's global evaluation_interval). */
  defaultSubqueryStep?: number;
  /**
   * Samples read from storage, points of the intermediate results held at once, and steps of the
   * query or any subquery (checked before anything is read): Prometheus's --query.max-samples.
   */
  maxSamples?: number;
  /** Series in the result. */
  maxSeries?: number;
  /** Evaluation stops with a timeout error after this time (ms since the epoch). */
  deadline?: number;
  /** Evaluation stops with PromqlCanceledError once this fires (checked where it yields). */
  signal?: AbortSignal;
}

export interface InstantSample {
  metric: LabelSet;
  t: number;
  v: number;
}
export interface RangeSeries {
  metric: LabelSet;
  t: number[];
  v: number[];
}
export type QueryResult =
  | { resultType: 'vector'; result: InstantSample[] }
  | { resultType: 'scalar'; result: { t: number; v: number } }
  | { resultType: 'string'; result: { t: number; v: string } }
  | { resultType: 'matrix'; result: RangeSeries[] };

export const DEFAULT_LOOKBACK = 5 * 60_000;
export const DEFAULT_SUBQUERY_STEP = 60_000;
export const DEFAULT_MAX_SAMPLES = 50_000_000;

export async function instantQuery(
  queryable: Queryable,
  query: string | Expr,
  time: number,
  options: QueryOptions = {},
): Promise<QueryResult> {
  const expr = typeof query === 'string' ? parseExpr(query) : query;
  const type = valueType(expr);
  if (type === 'string') {
    // 2.42 fails on a parenthesized string at the top (its step-invariant wrapper mishandles it).
    if (expr.type === 'paren')
      throw new PromqlExecutionError(
        'unexpected result in StepInvariantExpr evaluation: *parser.StepInvariantExpr',
      );
    const literal = unwrap(expr);
    return { resultType: 'string', result: { t: time, v: literal.type === 'string' ? literal.value : '' } };
  }
  const ctx = await prepare(queryable, expr, time, time, 1, options);
  const m = await evaluate(ctx, expr, time, time, 1);
  checkSeries(m.length, options);
  if (type === 'scalar') return { resultType: 'scalar', result: { t: time, v: m[0].v[0] } };
  if (type === 'vector')
    return { resultType: 'vector', result: m.map((s) => ({ metric: s.metric, t: time, v: s.v[0] })) };
  return { resultType: 'matrix', result: m.sort((a, b) => compareLabels(a.metric, b.metric)) };
}

export async function rangeQuery(
  queryable: Queryable,
  query: string | Expr,
  start: number,
  end: number,
  step: number,
  options: QueryOptions = {},
): Promise<QueryResult> {
  const expr = typeof query === 'string' ? parseExpr(query) : query;
  const type = valueType(expr);
  if (type !== 'scalar' && type !== 'vector')
    throw new PromqlBadQueryError(
      `invalid expression type "${documentedType(type)}" for range query, must be Scalar or instant Vector`,
    );
  if (!(step > 0) || end < start)
    throw new PromqlBadQueryError('a range query needs step > 0 and end >= start');
  const ctx = await prepare(queryable, expr, start, end, step, options);
  const m = await evaluate(ctx, expr, start, end, step);
  checkSeries(m.length, options);
  return { resultType: 'matrix', result: m.sort((a, b) => compareLabels(a.metric, b.metric)) };
}

function unwrap(e: Expr): Expr {
  return e.type === 'paren' ? unwrap(e.expr) : e;
}

/**
 * Evaluates the query. A RangeError (an array or string past what JavaScript allows, a stack
 * overflow) is the query's doing, not a defect: a clean execution error, as the limits give.
 */
async function evaluate(
  ctx: QueryContext,
  expr: Expr,
  start: number,
  end: number,
  step: number,
): Promise<Matrix> {
  try {
    return await new Evaluator(ctx, start, end, step).eval(expr);
  } catch (err) {
    if (err instanceof RangeError)
      throw new PromqlExecutionError(`query processing failed in query execution: ${err.message}`);
    throw err;
  }
}

function checkSeries(n: number, options: QueryOptions): void {
  if (options.maxSeries !== undefined && n > options.maxSeries)
    throw new PromqlExecutionError(`query returned more than ${options.maxSeries} series`);
}

async function prepare(
  queryable: Queryable,
  expr: Expr,
  start: number,
  end: number,
  step: number,
  options: QueryOptions,
): Promise<QueryContext> {
  const data = new Map<VectorSelector, StoredSeries[]>();
  const ctx = new QueryContext(
    data,
    start,
    end,
    options.lookbackDelta ?? DEFAULT_LOOKBACK,
    options.defaultSubqueryStep ?? DEFAULT_SUBQUERY_STEP,
    {
      maxSamples: options.maxSamples ?? DEFAULT_MAX_SAMPLES,
      deadline: options.deadline ?? Infinity,
      signal: options.signal,
    },
  );
  // Too many steps anywhere is refused before anything is read or evaluated.
  checkSteps(expr, ctx, start, end, step);
  const ranges = new Map<VectorSelector, [number, number]>();
  collectRanges(expr, { offset: 0, range: 0, at: null }, ctx, ranges);
  for (const [selector, [mint, maxt]] of ranges) {
    ctx.checkDeadline();
    // The store counts each series as it decodes it (and stops past the limit); a Queryable that
    // does not count is counted here.
    let counted = 0;
    const selected = await queryable.select(selector.matchers, mint, maxt, (n) => {
      counted += n;
      ctx.countLoaded(n);
    });
    const series: StoredSeries[] = selected.map((s) => ({
      labels: s.labels,
      t: s.timestamps,
      v: s.values,
    }));
    ctx.countLoaded(series.reduce((n, s) => n + s.t.length, 0) - counted);
    data.set(
      selector,
      series.sort((a, b) => compareLabels(a.labels, b.labels)),
    );
  }
  ctx.checkDeadline();
  return ctx;
}

/**
 * The steps of every evaluator the query will run, the query's own and each subquery's (whose
 * span is its enclosing evaluator's, widened by its range), checked against the sample limit: each
 * step of even a constant is a point of the result.
 */
function checkSteps(e: Expr, ctx: QueryContext, start: number, end: number, step: number): void {
  ctx.checkSteps(Math.floor((end - start) / step) + 1);
  const walk = (node: Expr, from: number, to: number): void => {
    switch (node.type) {
      case 'subquery': {
        const [innerStart, innerEnd, innerStep] = subquerySteps(node, ctx, from, to);
        ctx.checkSteps(Math.floor((innerEnd - innerStart) / innerStep) + 1);
        return walk(node.expr, innerStart, innerEnd);
      }
      case 'paren':
      case 'unary':
        return walk(node.expr, from, to);
      case 'binary':
        walk(node.lhs, from, to);
        return walk(node.rhs, from, to);
      case 'aggregate':
        if (node.param) walk(node.param, from, to);
        return walk(node.expr, from, to);
      case 'call':
        for (const arg of node.args) walk(arg, from, to);
        return;
      case 'matrixSelector':
      case 'vectorSelector':
      case 'number':
      case 'string':
        return;
    }
  };
  walk(e, start, end);
}

interface SubqueryPath {
  offset: number;
  range: number;
  at: number | null;
}

/**
 * The time range each selector is read over: exactly Prometheus 2.42's getTimeRangesForSelector
 * (so that what a query can see at the edges, e.g. timestamp() with @ and offset, is the same).
 * Enclosing subqueries add their offsets and ranges; an @ on a subquery or selector replaces them.
 */
function collectRanges(
  e: Expr,
  path: SubqueryPath,
  ctx: QueryContext,
  out: Map<VectorSelector, [number, number]>,
  evalRange = 0,
): void {
  switch (e.type) {
    case 'vectorSelector': {
      let start = path.at ?? ctx.start;
      let end = path.at ?? ctx.end;
      const at = ctx.atTime(e.at);
      if (at !== null) start = end = at;
      else {
        start -= path.offset + path.range;
        end -= path.offset;
      }
      start -= evalRange === 0 ? ctx.lookback : evalRange;
      const known = out.get(e);
      const [mint, maxt] = [start - e.offset, end - e.offset];
      out.set(e, known ? [Math.min(known[0], mint), Math.max(known[1], maxt)] : [mint, maxt]);
      return;
    }
    case 'matrixSelector':
      return collectRanges(e.selector, path, ctx, out, e.range);
    case 'subquery': {
      const at = ctx.atTime(e.at);
      const inner =
        at !== null
          ? { offset: e.offset, range: e.range, at }
          : { offset: path.offset + e.offset, range: path.range + e.range, at: path.at };
      return collectRanges(e.expr, inner, ctx, out);
    }
    case 'paren':
    case 'unary':
      return collectRanges(e.expr, path, ctx, out);
    case 'binary':
      collectRanges(e.lhs, path, ctx, out);
      return collectRanges(e.rhs, path, ctx, out);
    case 'aggregate':
      if (e.param) collectRanges(e.param, path, ctx, out);
      return collectRanges(e.expr, path, ctx, out);
    case 'call':
      for (const arg of e.args) collectRanges(arg, path, ctx, out);
      return;
    case 'number':
    case 'string':
      return;
  }
}
