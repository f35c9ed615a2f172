import { describe, expect, it } from 'vitest';
import { Random } from '../../../test/support/random.js';
import { labelsFromRecord } from './labels.js';
import { compileMatcher, matchesAll } from './matchers.js';
import { PostingsIndex } from './postings.js';
import type { LabelSet, Matcher, MatchType } from './series.js';

const NAMES = ['__name__', 'job', 'instance', 'code', 'le'];
const VALUES = ['', 'a', 'b', 'ab', 'node', 'web', '200', '500', '0.5', '+Inf'];
const PATTERNS = ['.*', '.+', 'a|b', 'a.*', '.*b', '[0-9]+', 'node|', '', '(?i)NODE', '2..|5..'];

function randomSeries(rnd: Random): LabelSet {
  const record: Record<string, string> = {};
  for (const name of NAMES) if (rnd.next() < 0.7) record[name] = rnd.pick(VALUES);
  if (record.__name__) record.__name__ = rnd.pick(['up', 'a', 'b', 'node']);
  return labelsFromRecord(record);
}

function randomMatcher(rnd: Random): Matcher {
  const type = rnd.pick<MatchType>(['=', '!=', '=~', '!~']);
  const value = type === '=' || type === '!=' ? rnd.pick(VALUES) : rnd.pick(PATTERNS);
  return { type, name: rnd.pick([...NAMES, 'missing']), value };
}

describe('postings index', () => {
  it('selects exactly the series a linear scan selects, for random matchers (seeded)', () => {
    const rnd = new Random(2024);
    const index = new PostingsIndex();
    const all = new Map<number, LabelSet>();
    // Ids arrive out of order, and some series are replaced or removed, as after a restart.
    for (let i = 0; i < 600; i++) {
      const id = rnd.int(0, 999);
      const labels = randomSeries(rnd);
      index.add(id, labels);
      all.set(id, labels);
      if (rnd.next() < 0.1) {
        const gone = rnd.int(0, 999);
        index.remove(gone);
        all.delete(gone);
      }
    }
    expect(index.size).toBe(all.size);
    let partial = 0;
    for (let round = 0; round < 1500; round++) {
      const matchers = Array.from({ length: rnd.int(0, 3) }, () => randomMatcher(rnd));
      const compiled = matchers.map(compileMatcher);
      const expected = [...all.entries()]
        .filter(([, labels]) => matchesAll(compiled, labels))
        .map(([id]) => id)
        .sort((a, b) => a - b);
      expect(index.select(matchers), JSON.stringify(matchers)).toEqual(expected);
      if (expected.length > 0 && expected.length < all.size) partial++;
    }
    // The cases are not all trivial: most select some series and leave others.
    expect(partial).toBeGreaterThan(700);
  });

  it('lists label names and values, and hands out copies it does not share', () => {
    const index = new PostingsIndex();
    index.add(2, labelsFromRecord({ __name__: 'up', job: 'b' }));
    index.add(1, labelsFromRecord({ __name__: 'up', job: 'a' }));
    index.add(3, labelsFromRecord({ __name__: 'down' }));
    expect(index.labelNames()).toEqual(['__name__', 'job']);
    expect(index.labelValues('job')).toEqual(['a', 'b']);
    expect(index.labelValues('nope')).toEqual([]);
    const ups = index.select([{ type: '=', name: '__name__', value: 'up' }]);
    expect(ups).toEqual([1, 2]);
    ups.push(99);
    expect(index.select([{ type: '=', name: '__name__', value: 'up' }])).toEqual([1, 2]);
    expect(index.select([])).toEqual([1, 2, 3]);
    index.remove(3);
    expect(index.labels(3)).toBeUndefined();
    expect(index.select([{ type: '=', name: 'job', value: '' }])).toEqual([]);
  });
});
