/**
 * Functions over instant vectors and scalars (promql/functions.go, 2.42), applied at each step to
 * the arguments' vectors. String arguments are read from the syntax tree, as Prometheus does.
 */
import { unwrapParens, type Call, type Expr } from '../ast.js';
import { EMPTY_LABELS, labelValue, METRIC_NAME_LABEL } from '../../labels.js';
import { dropMetricName, seriesKey, setLabel, withoutLabels } from '../labels.js';
import { parseGoFloat } from '../lexical.js';
import type { LabelSet } from '../../series.js';
import type { Vector } from '../values.js';
import { bucketQuantile, type Bucket } from './quantile.js';
import { dateFunctions } from './dates.js';
import { labelJoin, labelReplace } from './labels.js';

/** One call's evaluation: the arguments' vectors at a step, and state kept across steps. */
export type InstantFunction = (
  vectors: Vector[],
  call: Call,
  ts: number,
  state: Map<string, unknown>,
) => Vector;

function simple(f: (v: number) => number): InstantFunction {
  return ([vec]) => vec.map((s) => ({ metric: dropMetricName(s.metric), v: f(s.v), t: s.t }));
}

/**
 * The labels absent() reports: the selector's equality matchers; a name matched a second time, or
 * by another kind of matcher, is removed (in matcher order, as 2.42 does it).
 */
function absentLabels(arg: Expr): LabelSet {
  // Prometheus unwraps parentheses around call arguments before this looks at them.
  const e = unwrapParens(arg);
  const matchers =
    e.type === 'vectorSelector' ? e.matchers : e.type === 'matrixSelector' ? e.selector.matchers : null;
  if (!matchers) return EMPTY_LABELS;
  let out: LabelSet = EMPTY_LABELS;
  const has = new Set<string>();
  for (const m of matchers) {
    if (m.name === METRIC_NAME_LABEL) continue;
    if (m.type === '=' && !has.has(m.name)) {
      out = setLabel(out, m.name, m.value);
      has.add(m.name);
    } else out = setLabel(out, m.name, '');
  }
  return out;
}

const EXCLUDED_BY_HISTOGRAM = new Set([METRIC_NAME_LABEL, 'le']);
const LE_ONLY = new Set(['le']);

const histogramQuantile: InstantFunction = ([q, vec]) => {
  const groups = new Map<string, { metric: LabelSet; buckets: Bucket[] }>();
  for (const s of vec) {
    const upperBound = parseGoFloat(labelValue(s.metric, 'le'));
    if (upperBound === undefined) continue;
    // Grouped by everything but `le` (the name included); reported without `le` and the name.
    const key = seriesKey(withoutLabels(s.metric, LE_ONLY));
    let group = groups.get(key);
    if (!group)
      groups.set(key, (group = { metric: withoutLabels(s.metric, EXCLUDED_BY_HISTOGRAM), buckets: [] }));
    group.buckets.push({ upperBound, count: s.v });
  }
  return [...groups.values()].map((g) => ({ metric: g.metric, v: bucketQuantile(q[0].v, g.buckets), t: 0 }));
};

function clamp(vec: Vector, min: number, max: number): Vector {
  if (max < min) return [];
  return vec.map((s) => ({ metric: dropMetricName(s.metric), v: Math.max(min, Math.min(max, s.v)), t: s.t }));
}

/** Ascending, NaN last (sort); descending, NaN last (sort_desc). */
function sortBy(desc: boolean): InstantFunction {
  return ([vec]) =>
    [...vec].sort((a, b) => {
      if (Number.isNaN(a.v)) return Number.isNaN(b.v) ? 0 : 1;
      if (Number.isNaN(b.v)) return -1;
      return desc ? b.v - a.v : a.v - b.v;
    });
}

const none: InstantFunction = () => [];

export const INSTANT_FUNCTIONS: ReadonlyMap<string, InstantFunction> = new Map<string, InstantFunction>([
  ['abs', simple(Math.abs)],
  ['ceil', simple(Math.ceil)],
  ['floor', simple(Math.floor)],
  ['exp', simple(Math.exp)],
  ['sqrt', simple(Math.sqrt)],
  ['ln', simple(Math.log)],
  ['log2', simple(Math.log2)],
  ['log10', simple(Math.log10)],
  ['sin', simple(Math.sin)],
  ['cos', simple(Math.cos)],
  ['tan', simple(Math.tan)],
  ['asin', simple(Math.asin)],
  ['acos', simple(Math.acos)],
  ['atan', simple(Math.atan)],
  ['sinh', simple(Math.sinh)],
  ['cosh', simple(Math.cosh)],
  ['tanh', simple(Math.tanh)],
  ['asinh', simple(Math.asinh)],
  ['acosh', simple(Math.acosh)],
  ['atanh', simple(Math.atanh)],
  ['deg', simple((v) => (v * 180) / Math.PI)],
  ['rad', simple((v) => (v * Math.PI) / 180)],
  ['sgn', simple((v) => (v < 0 ? -1 : v > 0 ? 1 : v))],
  ['timestamp', ([vec]) => vec.map((s) => ({ metric: dropMetricName(s.metric), v: s.t / 1000, t: s.t }))],
  [
    'round',
    ([vec, to]) => {
      const inverse = 1 / (to ? to[0].v : 1);
      return vec.map((s) => ({
        metric: dropMetricName(s.metric),
        v: Math.floor(s.v * inverse + 0.5) / inverse,
        t: s.t,
      }));
    },
  ],
  ['clamp', ([vec, min, max]) => clamp(vec, min[0].v, max[0].v)],
  ['clamp_min', ([vec, min]) => clamp(vec, min[0].v, Infinity)],
  ['clamp_max', ([vec, max]) => clamp(vec, -Infinity, max[0].v)],
  ['time', (_v, _c, ts) => [{ metric: EMPTY_LABELS, v: ts / 1000, t: ts }]],
  ['pi', (_v, _c, ts) => [{ metric: EMPTY_LABELS, v: Math.PI, t: ts }]],
  ['vector', ([s], _c, ts) => [{ metric: EMPTY_LABELS, v: s[0].v, t: ts }]],
  ['scalar', ([vec], _c, ts) => [{ metric: EMPTY_LABELS, v: vec.length === 1 ? vec[0].v : NaN, t: ts }]],
  [
    'absent',
    ([vec], call, ts) => (vec.length > 0 ? [] : [{ metric: absentLabels(call.args[0]), v: 1, t: ts }]),
  ],
  ['sort', sortBy(false)],
  ['sort_desc', sortBy(true)],
  ['histogram_quantile', histogramQuantile],
  ['histogram_count', none],
  ['histogram_sum', none],
  ['histogram_fraction', none],
  ['label_replace', labelReplace],
  ['label_join', labelJoin],
  ...dateFunctions(),
]);

export { absentLabels };
