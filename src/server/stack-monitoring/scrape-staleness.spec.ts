import { describe, expect, it } from 'vitest';
import { labelsFromRecord, labelsKey } from '../metric-store/labels.js';
import { FORGET_TARGET_MS, ScrapeStaleness } from './scrape-staleness.js';

const series = (name: string, path = '/') => labelsFromRecord({ __name__: name, path });
const keys = (sets: ReturnType<typeof series>[]) => sets.map(labelsKey).sort();

describe('staleness of scraped series', () => {
  it('returns nothing after the first scrape of a target, and the series a later scrape lost', () => {
    const s = new ScrapeStaleness();
    s.seen('t', series('a'), 0);
    s.seen('t', series('b'), 0);
    expect(s.ended('t', 0)).toEqual([]);
    s.seen('t', series('a'), 1);
    expect(keys(s.ended('t', 1))).toEqual(keys([series('b')]));
    // Already reported once: a series stays gone without another marker.
    s.seen('t', series('a'), 2);
    expect(s.ended('t', 2)).toEqual([]);
  });

  it('counts a scrape in several parts as one, and a failed scrape loses every series', () => {
    const s = new ScrapeStaleness();
    s.seen('t', series('a'), 0);
    s.seen('t', series('b'), 0);
    s.ended('t', 0);
    s.seen('t', series('a'), 1);
    s.seen('t', series('b'), 1);
    expect(s.ended('t', 1)).toEqual([]);
    expect(keys(s.ended('t', 2))).toEqual(keys([series('a'), series('b')]));
  });

  it('keeps targets apart, and forgets those not scraped for a while', () => {
    const s = new ScrapeStaleness();
    s.seen('t1', series('a'), 0);
    s.ended('t1', 0);
    s.seen('t2', series('a', '/x'), FORGET_TARGET_MS);
    s.ended('t2', FORGET_TARGET_MS);
    expect(s.ended('t2', FORGET_TARGET_MS)).toHaveLength(1);
    expect(s.size).toBe(2);
    s.forget(1);
    expect(s.size).toBe(1);
    // t1 starts over: nothing to compare with.
    expect(s.ended('t1', FORGET_TARGET_MS)).toEqual([]);
  });
});
