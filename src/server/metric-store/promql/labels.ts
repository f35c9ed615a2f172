/**
 * Label-set operations only the engine needs (private to promql/), over the shared ones of
 * ../labels.ts: identity keys and name-dropped sets cached per label-set object (the same object
 * flows through every step of an evaluation), subsets, group keys and labels.Builder's Set.
 */
import { labelsKey, METRIC_NAME_LABEL, withoutMetricName } from '../labels.js';
import type { Label, LabelSet } from '../series.js';

const keys = new WeakMap<LabelSet, string>();

/** The label set's identity (../labels.ts labelsKey, the role of Labels.Hash), cached per object. */
export function seriesKey(ls: LabelSet): string {
  let key = keys.get(ls);
  if (key === undefined) keys.set(ls, (key = labelsKey(ls)));
  return key;
}

const dropped = new WeakMap<LabelSet, LabelSet>();

/** The set without `__name__` (../labels.ts withoutMetricName), cached per object. */
export function dropMetricName(ls: LabelSet): LabelSet {
  let out = dropped.get(ls);
  if (out === undefined) dropped.set(ls, (out = withoutMetricName(ls)));
  return out;
}

/** The labels whose names are not in `names`. */
export function withoutLabels(ls: LabelSet, names: ReadonlySet<string>): LabelSet {
  return ls.filter((l) => !names.has(l.name));
}

/** The labels whose names are in `names`. */
export function onlyLabels(ls: LabelSet, names: ReadonlySet<string>): LabelSet {
  return ls.filter((l) => names.has(l.name));
}

/** labels.Builder.Set: an empty value deletes the label; the result stays sorted. */
export function setLabel(ls: LabelSet, name: string, value: string): LabelSet {
  const out: Label[] = ls.filter((l) => l.name !== name);
  if (value !== '') {
    let i = 0;
    while (i < out.length && out[i].name < name) i++;
    out.splice(i, 0, { name, value });
  }
  return out;
}

/** A key over the named labels only (HashForLabels), or over all but them and `__name__`. */
export function groupKey(ls: LabelSet, names: ReadonlySet<string>, without: boolean): string {
  let key = '';
  for (const l of ls) {
    const named = names.has(l.name);
    if (without ? named || l.name === METRIC_NAME_LABEL : !named) continue;
    key += `${l.name}\xff${l.value}\xfe`;
  }
  return key;
}
