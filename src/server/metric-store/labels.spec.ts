import { describe, expect, it } from 'vitest';
import { Random } from '../../../test/support/random.js';
import { MetricInputError } from './errors.js';
import {
  canonicalLabels,
  hashString,
  isValidLabelName,
  isValidMetricName,
  labelsFromRecord,
  labelsHash,
  labelsKey,
  labelValue,
  metricName,
  withMetricName,
  withoutMetricName,
} from './labels.js';

const l = (name: string, value: string) => ({ name, value });

describe('label names', () => {
  it('follow Prometheus: metric names may hold colons, label names may not', () => {
    for (const ok of ['a', '_', 'A_1', '__name__', 'http_requests_total'])
      expect(isValidLabelName(ok)).toBe(true);
    for (const bad of ['', '1a', 'a-b', 'a:b', 'a b', 'é', 'a\n']) expect(isValidLabelName(bad)).toBe(false);
    for (const ok of ['a', ':a', 'job:rate5m:sum', '_x1']) expect(isValidMetricName(ok)).toBe(true);
    for (const bad of ['', '1a', 'a-b', 'a.b', 'a{']) expect(isValidMetricName(bad)).toBe(false);
  });
});

describe('canonical label sets', () => {
  it('sorts by name and drops empty values', () => {
    expect(canonicalLabels([l('job', 'x'), l('__name__', 'up'), l('a', ''), l('instance', 'h:1')])).toEqual([
      l('__name__', 'up'),
      l('instance', 'h:1'),
      l('job', 'x'),
    ]);
    expect(labelsFromRecord({ b: '2', a: '1' })).toEqual([l('a', '1'), l('b', '2')]);
  });

  it('refuses invalid and duplicate names, bad metric names, missing names and oversize sets', () => {
    const refuse = (labels: { name: string; value: string }[], message: RegExp, opts = {}) => {
      expect(() => canonicalLabels(labels, opts)).toThrow(MetricInputError);
      expect(() => canonicalLabels(labels, opts)).toThrow(message);
    };
    refuse([l('a-b', 'x')], /invalid label name "a-b"/);
    refuse([l('__name__', 'a.b')], /invalid metric name "a.b"/);
    refuse([l('a', '1'), l('b', '2'), l('a', '3')], /duplicate label name "a"/);
    refuse([l('a', ''), l('a', 'x')], /duplicate/);
    refuse([l('job', 'x')], /no metric name/, { requireName: true });
    refuse([l('__name__', ''), l('job', 'x')], /no metric name/, { requireName: true });
    refuse([l('a', '1'), l('b', '2')], /2 labels, more than the limit of 1/, { maxLabels: 1 });
    refuse([l('abc', '1')], /longer than 2/, { maxNameLength: 2 });
    refuse([l('a', 'x'.repeat(1000))], /value of label "a" is longer than 10/, { maxValueLength: 10 });
    // Messages quote at most 64 characters of what they refuse.
    expect(() => canonicalLabels([l('-'.repeat(10_000), '')])).toThrow(/^invalid label name "-{64}…"$/);
  });
});

describe('label keys and hashes', () => {
  it('write the Prometheus label-set string with escaped values', () => {
    const labels = canonicalLabels([l('__name__', 'up'), l('v', 'a"b\\c\nd, e="f"}')]);
    expect(labelsKey(labels)).toBe('{__name__="up", v="a\\"b\\\\c\\nd, e=\\"f\\"}"}');
    expect(labelsKey([])).toBe('{}');
  });

  it('give different keys to different sets, whatever the values hold (seeded)', () => {
    const rnd = new Random(3);
    const seen = new Map<string, string>();
    for (let i = 0; i < 20_000; i++) {
      const record: Record<string, string> = {};
      for (let k = rnd.int(1, 3); k > 0; k--)
        record[rnd.pick(['a', 'b', 'c', 'a_b'])] = rnd.string('ab"\\\n,= {}', 0, 4);
      const set = labelsFromRecord(record);
      const identity = JSON.stringify(set);
      const key = labelsKey(set);
      expect(seen.get(key) ?? identity).toBe(identity);
      seen.set(key, identity);
    }
    expect(seen.size).toBeGreaterThan(5000);
  });

  it('hash stably: the same value on every run and version, since hashes may be stored', () => {
    expect(hashString('')).toBe(3338908027751811);
    expect(hashString('{__name__="up", job="node"}')).toBe(hashString('{__name__="up", job="node"}'));
    expect(labelsHash(labelsFromRecord({ __name__: 'up' }))).toBe(hashString('{__name__="up"}'));
    const hashes = new Set(Array.from({ length: 10_000 }, (_, i) => hashString(`{i="${i}"}`)));
    expect(hashes.size).toBe(10_000);
    for (const h of hashes) expect(Number.isSafeInteger(h) && h >= 0).toBe(true);
  });
});

describe('metric name helpers', () => {
  it('read, drop and set the metric name; a missing label reads as empty', () => {
    const labels = labelsFromRecord({ __name__: 'up', job: 'x' });
    expect(metricName(labels)).toBe('up');
    expect(metricName(withoutMetricName(labels))).toBeUndefined();
    expect(withoutMetricName(labels)).toEqual([l('job', 'x')]);
    expect(withMetricName(withoutMetricName(labels), 'down')).toEqual([l('__name__', 'down'), l('job', 'x')]);
    expect(labelValue(labels, 'job')).toBe('x');
    expect(labelValue(labels, 'nope')).toBe('');
  });
});
