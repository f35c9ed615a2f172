/**
 * Binary operators as Prometheus 2.42 evaluates them: scalar/scalar, vector/scalar (filtering
 * comparisons keep the vector's value), vector/vector with one-to-one or group_left/group_right
 * matching and its errors, and the set operators.
 */
import type { BinaryExpr, BinaryOp, VectorMatching } from './ast.js';
import { dropsMetricName, isComparison } from './ast.js';
import { valueType } from './check.js';
import { PromqlExecutionError } from './errors.js';
import type { Evaluator } from './evaluator.js';
import { labelValue, METRIC_NAME_LABEL } from '../labels.js';
import { dropMetricName, onlyLabels, seriesKey, setLabel, withoutLabels } from './labels.js';
import type { LabelSet } from '../series.js';
import type { Matrix, Sample, Vector } from './values.js';

/** Go's math.Pow where it differs from `**`: 1^y and x^±0 are 1, (-1)^±Inf is 1. */
function pow(x: number, y: number): number {
  if (y === 0 || x === 1) return 1;
  if (x === -1 && !Number.isFinite(y) && !Number.isNaN(y)) return 1;
  return x ** y;
}

/** The value of `lhs op rhs`, and for comparisons whether it holds. */
function apply(op: BinaryOp, lhs: number, rhs: number): [number, boolean] {
  switch (op) {
    case '+':
      return [lhs + rhs, true];
    case '-':
      return [lhs - rhs, true];
    case '*':
      return [lhs * rhs, true];
    case '/':
      return [lhs / rhs, true];
    case '%':
      return [lhs % rhs, true];
    case '^':
      return [pow(lhs, rhs), true];
    case 'atan2':
      return [Math.atan2(lhs, rhs), true];
    case '==':
      return [lhs, lhs === rhs];
    case '!=':
      return [lhs, lhs !== rhs];
    case '>':
      return [lhs, lhs > rhs];
    case '<':
      return [lhs, lhs < rhs];
    case '>=':
      return [lhs, lhs >= rhs];
    case '<=':
      return [lhs, lhs <= rhs];
    case 'and':
    case 'or':
    case 'unless':
      throw new PromqlExecutionError(`operator "${op}" not allowed for operations between scalars`);
  }
}

export async function evalBinary(ev: Evaluator, e: BinaryExpr): Promise<Matrix> {
  const lt = valueType(e.lhs);
  const rt = valueType(e.rhs);
  const lhs = await ev.eval(e.lhs);
  const rhs = await ev.eval(e.rhs);
  if (lt === 'scalar' && rt === 'scalar')
    return ev.rangeEval([lhs, rhs], ([l, r], ts) => {
      const [value, holds] = apply(e.op, l[0].v, r[0].v);
      return [{ metric: l[0].metric, v: isComparison(e.op) ? (holds ? 1 : 0) : value, t: ts }];
    });
  if (lt === 'vector' && rt === 'vector') {
    const matching = e.matching!;
    const sig = signatureFunction(matching);
    if (e.op === 'and' || e.op === 'unless') {
      const keepMatched = e.op === 'and';
      return ev.rangeEval([lhs, rhs], ([l, r]) => {
        const right = new Set(r.map(sig));
        return l.filter((s) => right.has(sig(s)) === keepMatched);
      });
    }
    if (e.op === 'or')
      return ev.rangeEval([lhs, rhs], ([l, r]) => {
        const left = new Set(l.map(sig));
        return [...l, ...r.filter((s) => !left.has(sig(s)))];
      });
    const state = new VectorBinop(e, matching, sig);
    return ev.rangeEval([lhs, rhs], ([l, r]) => state.apply(l, r));
  }
  const swap = lt === 'scalar';
  return ev.rangeEval([lhs, rhs], ([l, r]) => {
    const [vec, scalar] = swap ? [r, l[0].v] : [l, r[0].v];
    const out: Vector = [];
    for (const s of vec) {
      let [value, keep] = swap ? apply(e.op, scalar, s.v) : apply(e.op, s.v, scalar);
      // A filtering comparison keeps the vector's value, whichever side it is on.
      if (isComparison(e.op) && swap) value = s.v;
      if (e.returnBool) {
        value = keep ? 1 : 0;
        keep = true;
      }
      if (!keep) continue;
      const metric = dropsMetricName(e.op) || e.returnBool ? dropMetricName(s.metric) : s.metric;
      out.push({ metric, v: value, t: s.t });
    }
    return out;
  });
}

/**
 * The matching signature: the `on` labels, or all but the `ignoring` ones and the name; kept on
 * the sample (rangeEval's samples are per series) and per label set.
 */
function signatureFunction(matching: VectorMatching): (s: Sample) => string {
  const cache = new WeakMap<LabelSet, string>();
  const names = new Set(matching.on ? matching.labels : [...matching.labels, METRIC_NAME_LABEL]);
  return (s) => {
    if (typeof s.memo === 'string') return s.memo;
    let sig = cache.get(s.metric);
    if (sig === undefined) {
      sig = seriesKey(matching.on ? onlyLabels(s.metric, names) : withoutLabels(s.metric, names));
      cache.set(s.metric, sig);
    }
    s.memo = sig;
    return sig;
  };
}

/** Arithmetic and comparison between two vectors (VectorBinop), with its result-label cache. */
class VectorBinop {
  private readonly resultMetrics = new WeakMap<LabelSet, WeakMap<LabelSet, LabelSet>>();

  constructor(
    private readonly e: BinaryExpr,
    private readonly matching: VectorMatching,
    private readonly sig: (s: Sample) => string,
  ) {}

  apply(lhsIn: Vector, rhsIn: Vector): Vector {
    const { e, matching, sig } = this;
    if (lhsIn.length === 0 || rhsIn.length === 0) return [];
    const oneToMany = matching.card === 'one-to-many';
    const [lhs, rhs] = oneToMany ? [rhsIn, lhsIn] : [lhsIn, rhsIn];
    const rightSigs = new Map<string, Sample>();
    for (const rs of rhs) {
      const s = sig(rs);
      const dupl = rightSigs.get(s);
      if (dupl)
        throw new PromqlExecutionError(
          `found duplicate series for the match group on the ${oneToMany ? 'left' : 'right'} hand-side of the operation: ` +
            `[${formatLabels(rs.metric)}, ${formatLabels(dupl.metric)}];many-to-many matching not allowed: matching labels must be unique on one side`,
        );
      rightSigs.set(s, rs);
    }
    const matched = new Map<string, Set<string> | null>();
    const out: Vector = [];
    for (const ls of lhs) {
      const s = sig(ls);
      const rs = rightSigs.get(s);
      if (!rs) continue;
      const [vl, vr] = oneToMany ? [rs.v, ls.v] : [ls.v, rs.v];
      const [result, keep] = apply(e.op, vl, vr);
      if (!keep && !e.returnBool) continue;
      const value = e.returnBool ? (keep ? 1 : 0) : result;
      let metric = this.resultMetric(ls.metric, rs.metric);
      if (e.returnBool) metric = dropMetricName(metric);
      const inserted = matched.get(s);
      if (matching.card === 'one-to-one') {
        if (inserted !== undefined)
          throw new PromqlExecutionError(
            'multiple matches for labels: many-to-one matching must be explicit (group_left/group_right)',
          );
        matched.set(s, null);
      } else {
        const key = seriesKey(metric);
        if (inserted === undefined) matched.set(s, new Set([key]));
        else if (inserted!.has(key))
          throw new PromqlExecutionError(
            'multiple matches for labels: grouping labels must ensure unique matches',
          );
        else inserted!.add(key);
      }
      out.push({ metric, v: value, t: ls.t });
    }
    return out;
  }

  private resultMetric(lhs: LabelSet, rhs: LabelSet): LabelSet {
    let byRhs = this.resultMetrics.get(lhs);
    if (!byRhs) this.resultMetrics.set(lhs, (byRhs = new WeakMap()));
    let metric = byRhs.get(rhs);
    if (metric) return metric;
    const { e, matching } = this;
    metric = dropsMetricName(e.op) ? dropMetricName(lhs) : lhs;
    if (matching.card === 'one-to-one') {
      const names = new Set(matching.labels);
      metric = matching.on ? onlyLabels(metric, names) : withoutLabels(metric, names);
    }
    // group_x labels come from the "one" side.
    for (const name of matching.include) metric = setLabel(metric, name, labelValue(rhs, name));
    byRhs.set(rhs, metric);
    return metric;
  }
}

export function formatLabels(ls: LabelSet): string {
  return `{${ls.map((l) => `${l.name}=${JSON.stringify(l.value)}`).join(', ')}}`;
}
