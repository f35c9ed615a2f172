/**
 * The evaluator: Prometheus 2.42's engine structure (promql/engine.go). An evaluator covers the
 * steps start, start+interval, ..., end; each expression becomes a matrix over those steps;
 * `rangeEval` feeds functions, operators and aggregations the vector of each step. Subqueries run
 * a nested evaluator on their own aligned steps.
 */
import type { Expr, MatrixSelector, SubqueryExpr, VectorSelector } from './ast.js';
import { staleFlags } from '../series.js';
import { PromqlExecutionError } from './errors.js';
import { EMPTY_LABELS } from '../labels.js';
import { dropMetricName, seriesKey } from './labels.js';
import type { Matrix, QueryContext, Series, StoredSeries, Vector } from './values.js';
import { evalAggregate } from './aggregations.js';
import { evalBinary } from './binary.js';
import { evalCall } from './calls.js';

/** First index whose time is >= x (or > x when `after`). */
export function search(times: ArrayLike<number>, x: number, after = false): number {
  let lo = 0;
  let hi = times.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (times[mid] < x || (after && times[mid] === x)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Which of a selected series' samples are stale markers (null: none), worked out once. */
export function staleOf(s: StoredSeries): Uint8Array | null {
  if (s.stale === undefined) s.stale = staleFlags(s.v);
  return s.stale;
}

/** A selected series without its stale markers, as range vectors see it. */
export function nonStale(s: StoredSeries): { t: Float64Array; v: Float64Array } {
  if (!s.nonStale) {
    const stale = staleOf(s);
    if (stale === null) s.nonStale = { t: s.t, v: s.v };
    else {
      let keep = 0;
      for (let i = 0; i < stale.length; i++) keep += 1 - stale[i];
      const t = new Float64Array(keep);
      const v = new Float64Array(keep);
      for (let i = 0, j = 0; i < stale.length; i++)
        if (stale[i] === 0) {
          t[j] = s.t[i];
          v[j++] = s.v[i];
        }
      s.nonStale = { t, v };
    }
  }
  return s.nonStale;
}

export function containsSameLabelset(metrics: readonly { metric: readonly unknown[] }[]): boolean {
  if (metrics.length < 2) return false;
  const seen = new Set<string>();
  for (const s of metrics) {
    const key = seriesKey(s.metric as Series['metric']);
    if (seen.has(key)) return true;
    seen.add(key);
  }
  return false;
}

export class Evaluator {
  /** How many steps: start, start + interval, ... up to end (none when end < start). */
  readonly steps: number;

  /** Throws tooManySamples when there are more steps than the sample limit (nothing allocated yet). */
  constructor(
    readonly ctx: QueryContext,
    readonly start: number,
    readonly end: number,
    readonly interval: number,
  ) {
    this.steps = Math.max(0, Math.floor((end - start) / interval) + 1);
    ctx.checkSteps(this.steps);
  }

  /**
   * The time of step `i`. Loops count steps rather than add the interval up: near ±1e21 ms (an
   * `@` that far out) adding 1,000 no longer changes a double, and such a loop would never end.
   */
  time(i: number): number {
    return this.start + i * this.interval;
  }

  async eval(e: Expr): Promise<Matrix> {
    const m = await this.evalNode(e);
    this.ctx.checkResult(m);
    return m;
  }

  private async evalNode(e: Expr): Promise<Matrix> {
    switch (e.type) {
      case 'number': {
        this.ctx.hold(this.steps);
        // Sized once: up to maxSamples steps, where growing by push would copy and leave slack.
        const t = new Array<number>(this.steps);
        const v = new Array<number>(this.steps);
        for (let i = 0; i < this.steps; i++) {
          t[i] = this.time(i);
          v[i] = e.value;
        }
        return [{ metric: EMPTY_LABELS, t, v }];
      }
      case 'string':
        throw new PromqlExecutionError('a string is no operand here');
      case 'paren':
        return this.eval(e.expr);
      case 'unary':
        return this.unary(e.op, await this.eval(e.expr));
      case 'binary':
        return evalBinary(this, e);
      case 'aggregate':
        return evalAggregate(this, e);
      case 'call':
        return evalCall(this, e);
      case 'vectorSelector':
        return this.vectorSelector(e);
      case 'matrixSelector':
        return this.matrixSelector(e);
      case 'subquery':
        return this.subquery(e);
    }
  }

  private unary(op: '+' | '-', m: Matrix): Matrix {
    if (op === '+') return m;
    // The times are shared; the values are new.
    const out = m.map((s) => ({ metric: dropMetricName(s.metric), t: s.t, v: s.v.map((x) => -x) }));
    // Prometheus checks the whole matrix here, not step by step.
    if (containsSameLabelset(out))
      throw new PromqlExecutionError('vector cannot contain metrics with the same labelset');
    return out;
  }

  /**
   * Evaluates a step function over the inputs' vectors at every step. Inputs are matrices (null
   * for string arguments, which functions read from the syntax tree) or per-step vector sources.
   * A matrix input's samples are reused from step to step: a vector is only valid during its step.
   * The matrices are consumed: released (ctx.release) once every step has run.
   */
  async rangeEval(
    inputs: (Matrix | ((ts: number) => Vector) | null)[],
    fn: (vectors: Vector[], ts: number) => Vector,
  ): Promise<Matrix> {
    const cursors = inputs.map((m) => (Array.isArray(m) ? new Int32Array(m.length) : null));
    const pools = inputs.map((m) =>
      Array.isArray(m) ? m.map((s) => ({ metric: s.metric, v: 0, t: 0, memo: undefined })) : null,
    );
    const vectors: Vector[] = inputs.map(() => []);
    const out = new Map<string, Series>();
    const { start, interval, steps } = this;
    for (let step = 0; step < steps; step++) {
      // this.time(step), written out: the hot loop of every aggregation and function.
      const ts = start + step * interval;
      let work = 1;
      for (let i = 0; i < inputs.length; i++) {
        const input = inputs[i];
        if (input === null) continue;
        if (typeof input === 'function') {
          vectors[i] = input(ts);
          work += vectors[i].length;
          continue;
        }
        const cursor = cursors[i]!;
        const pool = pools[i]!;
        const vec: Vector = [];
        for (let si = 0; si < input.length; si++) {
          const s = input[si];
          const c = cursor[si];
          if (c < s.t.length && s.t[c] === ts) {
            const sample = pool[si];
            sample.v = s.v[c];
            sample.t = ts;
            vec.push(sample);
            cursor[si] = c + 1;
          }
        }
        vectors[i] = vec;
        work += input.length;
      }
      const result = fn(vectors, ts);
      if (containsSameLabelset(result))
        throw new PromqlExecutionError('vector cannot contain metrics with the same labelset');
      // An instant evaluation keeps the function's order, as Prometheus's shortcut does.
      this.ctx.hold(result.length);
      if (this.start === this.end) {
        this.releaseAll(inputs);
        return result.map((s) => ({ metric: s.metric, t: [ts], v: [s.v] }));
      }
      for (const s of result) {
        const key = seriesKey(s.metric);
        let series = out.get(key);
        if (!series) out.set(key, (series = { metric: s.metric, t: [], v: [] }));
        series.t.push(ts);
        series.v.push(s.v);
      }
      if (this.ctx.tick(work + result.length)) await this.ctx.pause();
    }
    this.releaseAll(inputs);
    return [...out.values()];
  }

  private releaseAll(inputs: (Matrix | ((ts: number) => Vector) | null)[]): void {
    for (const input of inputs) if (Array.isArray(input)) this.ctx.release(input);
  }

  private async vectorSelector(e: VectorSelector): Promise<Matrix> {
    const at = this.ctx.atTime(e.at);
    const lookback = this.ctx.lookback;
    const { start, interval, steps } = this;
    const out: Matrix = [];
    for (const s of this.ctx.data.get(e) ?? []) {
      const t: number[] = [];
      const v: number[] = [];
      const n = s.t.length;
      const stale = staleOf(s);
      let j = -1;
      for (let step = 0; step < steps; step++) {
        const ts = start + step * interval;
        const ref = (at ?? ts) - e.offset;
        while (j + 1 < n && s.t[j + 1] <= ref) j++;
        if (j >= 0 && s.t[j] >= ref - lookback && (stale === null || stale[j] === 0)) {
          t.push(ts);
          v.push(s.v[j]);
        }
      }
      // One series holds at most `steps` points (checked against the limit already).
      this.ctx.hold(t.length);
      if (t.length > 0) out.push({ metric: s.labels, t, v });
      if (this.ctx.tick(this.steps)) await this.ctx.pause();
    }
    return out;
  }

  /**
   * Per step, the sample a vector selector picks with its own timestamp (for timestamp()). As in
   * 2.42, an `@` time replaces the selector's offset rather than adding to it.
   */
  selectorSamples(e: VectorSelector): (ts: number) => Vector {
    const at = this.ctx.atTime(e.at);
    const series = this.ctx.data.get(e) ?? [];
    return (ts) => {
      const ref = at ?? ts - e.offset;
      const vec: Vector = [];
      for (const s of series) {
        const j = search(s.t, ref, true) - 1;
        const stale = staleOf(s);
        if (j >= 0 && s.t[j] >= ref - this.ctx.lookback && (stale === null || stale[j] === 0))
          vec.push({ metric: s.labels, v: s.v[j], t: s.t[j] });
      }
      return vec;
    };
  }

  /** A range vector at the evaluator's (single) time: the samples in [ref - range, ref]. */
  private matrixSelector(e: MatrixSelector): Matrix {
    const ref = (this.ctx.atTime(e.selector.at) ?? this.start) - e.selector.offset;
    const out: Matrix = [];
    for (const s of this.ctx.data.get(e.selector) ?? []) {
      const { t, v } = nonStale(s);
      const lo = search(t, ref - e.range);
      const hi = search(t, ref, true);
      this.ctx.hold(Math.max(0, hi - lo));
      if (hi > lo)
        out.push({ metric: s.labels, t: Array.from(t.subarray(lo, hi)), v: Array.from(v.subarray(lo, hi)) });
    }
    return out;
  }

  /**
   * The subquery's inner expression over its own steps, aligned to multiples of its step (refused
   * before evaluating when they are too many).
   */
  async subquery(e: SubqueryExpr): Promise<Matrix> {
    return new Evaluator(this.ctx, ...subquerySteps(e, this.ctx, this.start, this.end)).eval(e.expr);
  }
}

/**
 * A subquery's evaluation range within an evaluator's [start, end]: start, end and step. As in
 * 2.42, the inner expression is evaluated once over the whole span (not once per outer step), so
 * nested subqueries add their ranges rather than multiply their steps.
 */
export function subquerySteps(
  e: SubqueryExpr,
  ctx: QueryContext,
  outerStart: number,
  outerEnd: number,
): [number, number, number] {
  const at = ctx.atTime(e.at);
  const step = e.step || ctx.subqueryStep;
  const from = (at ?? outerStart) - e.offset - e.range;
  // Go's integer division truncates toward zero.
  let start = step * Math.trunc(from / step);
  if (start < from) start += step;
  return [start, (at ?? outerEnd) - e.offset, step];
}
