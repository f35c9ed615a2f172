/**
 * Label-set helpers the engine needs (private to promql/): Prometheus's ordering, identity keys,
 * and the builder operations its evaluator uses. Keys and name-dropped sets are cached per label-set
 * object, since the same object flows through every step of an evaluation.
 */
import type { Label, LabelSet, Matcher } from '../series.js';
import { compileAnchored } from './regex.js';

export const METRIC_NAME = '__name__';
export const EMPTY_LABELS: LabelSet = Object.freeze([]);

/** labels.Compare: label by label, name then value; a prefix sorts first. */
export function compareLabels(a: LabelSet, b: LabelSet): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    if (a[i].name !== b[i].name) return a[i].name < b[i].name ? -1 : 1;
    if (a[i].value !== b[i].value) return a[i].value < b[i].value ? -1 : 1;
  }
  return a.length - b.length;
}

const keys = new WeakMap<LabelSet, string>();

/** A string identifying the label set (the role of Labels.Hash in Prometheus). */
export function labelsKey(ls: LabelSet): string {
  let key = keys.get(ls);
  if (key === undefined) {
    key = '';
    for (const l of ls) key += `${l.name}\xff${l.value}\xfe`;
    keys.set(ls, key);
  }
  return key;
}

export function getLabel(ls: LabelSet, name: string): string {
  for (const l of ls) if (l.name === name) return l.value;
  return '';
}

const dropped = new WeakMap<LabelSet, LabelSet>();

export function dropMetricName(ls: LabelSet): LabelSet {
  let out = dropped.get(ls);
  if (out === undefined) {
    out = ls.some((l) => l.name === METRIC_NAME) ? ls.filter((l) => l.name !== METRIC_NAME) : ls;
    dropped.set(ls, out);
  }
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
    if (without ? named || l.name === METRIC_NAME : !named) continue;
    key += `${l.name}\xff${l.value}\xfe`;
  }
  return key;
}

export function matcherMatches(m: Matcher, value: string): boolean {
  switch (m.type) {
    case '=':
      return value === m.value;
    case '!=':
      return value !== m.value;
    case '=~':
      return compileAnchored(m.value).test(value);
    case '!~':
      return !compileAnchored(m.value).test(value);
  }
}

export function sortLabels(labels: Label[]): LabelSet {
  return labels.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}
