/**
 * Aggregation operators as Prometheus 2.42's `aggregation()` computes them: groups in order of
 * first appearance, the same incremental mean and variance, topk/bottomk through Go's
 * container/heap (so ties pick the same series), count_values' label from Go's float formatting.
 */
import { unwrapParens, type AggregateExpr } from './ast.js';
import { PromqlExecutionError } from './errors.js';
import type { Evaluator } from './evaluator.js';
import { EMPTY_LABELS, isValidLabelName, METRIC_NAME_LABEL } from '../labels.js';
import { groupKey, onlyLabels, setLabel, withoutLabels } from './labels.js';
import { formatGoFloat } from './lexical.js';
import { quantile } from './functions/quantile.js';
import { GoHeap } from './heap.js';
import type { LabelSet } from '../series.js';
import type { Matrix, Sample, Vector } from './values.js';

interface Group {
  labels: LabelSet;
  value: number;
  mean: number;
  count: number;
  heap: GoHeap<Sample> | null;
  values: number[] | null;
}

export async function evalAggregate(ev: Evaluator, e: AggregateExpr): Promise<Matrix> {
  const param = e.param ? unwrapParens(e.param) : null;
  const input = await ev.eval(e.expr);
  const grouping = new GroupCache(e);
  if (param?.type === 'string') {
    const valueLabel = param.value;
    return ev.rangeEval([input], ([vec]) => aggregate(e, valueLabel, vec, grouping));
  }
  const paramMatrix = e.param ? await ev.eval(e.param) : null;
  return ev.rangeEval([paramMatrix, input], ([p, vec]) =>
    aggregate(e, p.length > 0 ? p[0].v : 0, vec, grouping),
  );
}

/** Each input series' group key and output labels, computed once per series, not per step. */
class GroupCache {
  private readonly cache = new WeakMap<LabelSet, [string, LabelSet]>();
  readonly names: ReadonlySet<string>;
  private readonly dropOnWithout: ReadonlySet<string>;

  constructor(private readonly e: AggregateExpr) {
    this.names = new Set(e.grouping);
    this.dropOnWithout = new Set([...e.grouping, METRIC_NAME_LABEL]);
  }

  get(metric: LabelSet): [string, LabelSet] {
    let hit = this.cache.get(metric);
    if (!hit) {
      hit = groupOf(metric, this.names, this.dropOnWithout, this.e.without);
      this.cache.set(metric, hit);
    }
    return hit;
  }
}

function groupOf(
  metric: LabelSet,
  names: ReadonlySet<string>,
  dropOnWithout: ReadonlySet<string>,
  without: boolean,
): [string, LabelSet] {
  const labels = without
    ? withoutLabels(metric, dropOnWithout)
    : names.size > 0
      ? onlyLabels(metric, names)
      : EMPTY_LABELS;
  return [groupKey(metric, names, without), labels];
}

function aggregate(e: AggregateExpr, param: number | string, vec: Vector, cache: GroupCache): Vector {
  const { op, without } = e;
  let grouping = e.grouping;
  let k = 0;
  if (op === 'topk' || op === 'bottomk') {
    const f = param as number;
    if (!(f <= 9.223372036854776e18 && f >= -9.223372036854776e18))
      throw new PromqlExecutionError(`Scalar value ${formatGoFloat(f)} overflows int64`);
    k = Math.trunc(f);
    if (k < 1) return [];
  }
  let valueLabel = '';
  if (op === 'count_values') {
    valueLabel = param as string;
    if (!isValidLabelName(valueLabel)) throw new PromqlExecutionError(`invalid label name "${valueLabel}"`);
    if (!without) grouping = [...grouping, valueLabel];
  }
  // count_values groups by its new label too: no per-series cache for it.
  const names = op === 'count_values' ? new Set(grouping) : cache.names;
  const dropOnWithout = new Set([...grouping, METRIC_NAME_LABEL]);
  const groups = new Map<string, Group>();
  const ordered: Group[] = [];
  for (const s of vec) {
    const [key, labels] =
      op === 'count_values'
        ? groupOf(setLabel(s.metric, valueLabel, formatGoFloat(s.v)), names, dropOnWithout, without)
        : ((s.memo as [string, LabelSet] | undefined) ?? (s.memo = cache.get(s.metric)));
    const group = groups.get(key);
    if (!group) {
      const g: Group = { labels, value: s.v, mean: s.v, count: 1, heap: null, values: null };
      if (op === 'stddev' || op === 'stdvar') g.value = 0;
      else if (op === 'group') g.value = 1;
      else if (op === 'topk') g.heap = new GoHeap<Sample>((a, b) => Number.isNaN(a.v) || a.v < b.v, [s]);
      else if (op === 'bottomk') g.heap = new GoHeap<Sample>((a, b) => Number.isNaN(a.v) || a.v > b.v, [s]);
      else if (op === 'quantile') g.values = [s.v];
      groups.set(key, g);
      ordered.push(g);
      continue;
    }
    accumulate(op, group, s, k);
  }
  const out: Vector = [];
  for (const g of ordered) {
    switch (op) {
      case 'avg':
        g.value = g.mean;
        break;
      case 'count':
      case 'count_values':
        g.value = g.count;
        break;
      case 'stdvar':
        g.value = g.value / g.count;
        break;
      case 'stddev':
        g.value = Math.sqrt(g.value / g.count);
        break;
      case 'topk':
      case 'bottomk':
        // The heap keeps the weakest on top; the output lists the strongest first.
        for (const s of g.heap!.drainSorted().reverse()) out.push({ metric: s.metric, v: s.v, t: s.t });
        continue;
      case 'quantile':
        g.value = quantile(param as number, g.values!);
        break;
      case 'sum':
      case 'min':
      case 'max':
      case 'group':
        break;
    }
    out.push({ metric: g.labels, v: g.value, t: 0 });
  }
  return out;
}

function accumulate(op: AggregateExpr['op'], g: Group, s: Sample, k: number): void {
  switch (op) {
    case 'sum':
      g.value += s.v;
      break;
    case 'avg':
      g.count++;
      if (!Number.isFinite(g.mean) && !Number.isNaN(g.mean)) {
        // An infinite mean stays as it is, unless a NaN or an opposite infinity arrives.
        if (!Number.isFinite(s.v) && !Number.isNaN(s.v) && g.mean > 0 === s.v > 0) break;
        if (Number.isFinite(s.v)) break;
      }
      g.mean += s.v / g.count - g.mean / g.count;
      break;
    case 'group':
      break;
    case 'max':
      if (g.value < s.v || Number.isNaN(g.value)) g.value = s.v;
      break;
    case 'min':
      if (g.value > s.v || Number.isNaN(g.value)) g.value = s.v;
      break;
    case 'count':
    case 'count_values':
      g.count++;
      break;
    case 'stddev':
    case 'stdvar': {
      g.count++;
      const delta = s.v - g.mean;
      g.mean += delta / g.count;
      g.value += delta * (s.v - g.mean);
      break;
    }
    case 'topk':
    case 'bottomk': {
      const heap = g.heap!;
      const top = heap.peek();
      const better = op === 'topk' ? top.v < s.v : top.v > s.v;
      if (heap.size < k || better || Number.isNaN(top.v)) {
        if (heap.size === k) heap.pop();
        heap.push(s);
      }
      break;
    }
    case 'quantile':
      g.values!.push(s.v);
      break;
  }
}
