/**
 * Label sets for the whole metric store (docs/metric-store-design.md, "Series index"): Prometheus's
 * name rules, canonical sets (empty values dropped as Prometheus drops them, sorted by name,
 * duplicates refused), a canonical key string that identifies a series and a 53-bit hash of it,
 * Prometheus's order, and the lookups and edits storage and the engine share.
 */
import { quoteForMessage } from '../../contracts/exposition.js';
import { MetricInputError } from './errors.js';
import type { Label, LabelSet } from './series.js';

export const METRIC_NAME_LABEL = '__name__';
export const EMPTY_LABELS: LabelSet = Object.freeze([]);

const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;

/** Names already found valid: a handful of names recur across every series of a request. */
const validNames = new Set<string>();

export function isValidLabelName(name: string): boolean {
  if (validNames.has(name)) return true;
  if (!LABEL_NAME.test(name)) return false;
  if (validNames.size >= 10_000) validNames.clear();
  validNames.add(name);
  return true;
}

const validMetricNames = new Set<string>();

export function isValidMetricName(name: string): boolean {
  if (validMetricNames.has(name)) return true;
  if (!METRIC_NAME.test(name)) return false;
  if (validMetricNames.size >= 10_000) validMetricNames.clear();
  validMetricNames.add(name);
  return true;
}

/** Size limits on one label set; lengths in UTF-16 code units. */
export interface LabelLimits {
  maxLabels?: number;
  maxNameLength?: number;
  maxValueLength?: number;
}

export { quoteForMessage };

/**
 * The canonical form of a label set: names valid (`__name__`'s value a valid metric name),
 * unique, sorted by name; labels with empty values dropped, as Prometheus stores them. With
 * `requireName`, a set without a metric name is refused. Throws MetricInputError.
 */
export function canonicalLabels(
  input: Iterable<Label>,
  options: LabelLimits & { requireName?: boolean } = {},
): LabelSet {
  // A new array; the label objects themselves are shared, as label sets are never mutated.
  const labels: Label[] = Array.isArray(input) ? (input as Label[]).slice() : Array.from(input);
  if (options.maxLabels !== undefined && labels.length > options.maxLabels)
    throw new MetricInputError(
      `a series has ${labels.length} labels, more than the limit of ${options.maxLabels}`,
    );
  let sorted = true;
  for (let i = 0; i < labels.length; i++) {
    const { name, value } = labels[i];
    if (name === METRIC_NAME_LABEL) {
      if (value !== '' && !isValidMetricName(value))
        throw new MetricInputError(`invalid metric name ${quoteForMessage(value)}`);
    } else if (!isValidLabelName(name)) {
      throw new MetricInputError(`invalid label name ${quoteForMessage(name)}`);
    }
    if (options.maxNameLength !== undefined && name.length > options.maxNameLength)
      throw new MetricInputError(
        `label name ${quoteForMessage(name)} is longer than ${options.maxNameLength}`,
      );
    if (options.maxValueLength !== undefined && value.length > options.maxValueLength)
      throw new MetricInputError(
        `the value of label ${quoteForMessage(name)} is longer than ${options.maxValueLength}`,
      );
    if (i > 0 && labels[i - 1].name >= name) sorted = false;
  }
  if (!sorted) labels.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (let i = 1; i < labels.length; i++) {
    if (labels[i].name === labels[i - 1].name)
      throw new MetricInputError(`duplicate label name ${quoteForMessage(labels[i].name)}`);
  }
  const kept = labels.some((l) => l.value === '') ? labels.filter((l) => l.value !== '') : labels;
  if (options.requireName && !kept.some((l) => l.name === METRIC_NAME_LABEL))
    throw new MetricInputError(`a series has no metric name (${METRIC_NAME_LABEL}): ${labelsKey(kept)}`);
  return kept;
}

/** A label set from a plain object, canonicalised. */
export function labelsFromRecord(record: Readonly<Record<string, string>>): LabelSet {
  return canonicalLabels(Object.entries(record).map(([name, value]) => ({ name, value })));
}

/** A label value as PromQL and Prometheus's label strings quote it (\\, \" and \n escaped). */
export function quoteLabelValue(value: string): string {
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c === 0x5c || c === 0x22 || c === 0x0a)
      return `"${value.replace(/[\\"\n]/g, (ch) => (ch === '\n' ? '\\n' : `\\${ch}`))}"`;
  }
  return `"${value}"`;
}

/**
 * The canonical key of a canonical label set: Prometheus's own label-set string,
 * `{__name__="up", job="node"}`. Quoting makes it unambiguous, so equal keys mean equal sets.
 */
export function labelsKey(labels: LabelSet): string {
  let key = '{';
  for (let i = 0; i < labels.length; i++) {
    if (i > 0) key += ', ';
    key += `${labels[i].name}=${quoteLabelValue(labels[i].value)}`;
  }
  return `${key}}`;
}

/**
 * A 53-bit hash of a string (two multiplicative 32-bit lanes mixed at the end, as cyrb53), exact
 * as a JS number; stable across versions, so it may be stored. Collisions are possible: use it
 * to bucket, and compare keys to decide.
 */
export function hashString(s: string): number {
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 2654435761);
    h2 = Math.imul(h2 ^ c, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return 0x100000000 * (h2 & 0x1fffff) + (h1 >>> 0);
}

export function labelsHash(labels: LabelSet): number {
  return hashString(labelsKey(labels));
}

/** Prometheus's labels.Compare: label by label, name then value; a prefix sorts first. */
export function compareLabels(a: LabelSet, b: LabelSet): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    if (a[i].name !== b[i].name) return a[i].name < b[i].name ? -1 : 1;
    if (a[i].value !== b[i].value) return a[i].value < b[i].value ? -1 : 1;
  }
  return a.length - b.length;
}

/** A label's value; "" when absent, which is how PromQL matchers see a missing label. */
export function labelValue(labels: LabelSet, name: string): string {
  for (let i = 0; i < labels.length; i++) if (labels[i].name === name) return labels[i].value;
  return '';
}

export function metricName(labels: LabelSet): string | undefined {
  const value = labelValue(labels, METRIC_NAME_LABEL);
  return value === '' ? undefined : value;
}

/** The set without its metric name, as PromQL functions and aggregations drop it. */
export function withoutMetricName(labels: LabelSet): LabelSet {
  return labels.some((l) => l.name === METRIC_NAME_LABEL)
    ? labels.filter((l) => l.name !== METRIC_NAME_LABEL)
    : labels;
}

/** The set with its metric name set to `name` (kept sorted). */
export function withMetricName(labels: LabelSet, name: string): LabelSet {
  return canonicalLabels([...withoutMetricName(labels), { name: METRIC_NAME_LABEL, value: name }]);
}
