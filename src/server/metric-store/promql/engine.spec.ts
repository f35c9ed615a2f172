import { describe, expect, it } from 'vitest';
import {
  MemoryQueryable,
  type MemorySeries,
  type Sample,
} from '../../../../test/support/promql-diff/memory-queryable.js';
import type { Matcher, Queryable, SeriesSamples } from '../series.js';
import { instantQuery, rangeQuery, type QueryOptions, type QueryResult } from './engine.js';
import { PromqlError } from './errors.js';

const S = 1000;
const MIN = 60 * S;
const T = 1_700_000_040_000; // a whole minute since the epoch

function values(r: QueryResult): Record<string, number> {
  if (r.resultType !== 'vector') throw new Error(`not a vector: ${r.resultType}`);
  return Object.fromEntries(
    r.result.map((s) => [s.metric.map((l) => `${l.name}=${l.value}`).join(','), s.v]),
  );
}

async function failure(run: Promise<unknown>): Promise<PromqlError> {
  try {
    await run;
  } catch (err) {
    if (err instanceof PromqlError) return err;
    throw err;
  }
  throw new Error('the query succeeded');
}

const series = (labels: Record<string, string>, samples: Sample[]): MemorySeries => ({
  labels,
  samples,
});

describe('engine semantics', () => {
  const data = new MemoryQueryable([
    series({ __name__: 'a' }, [
      [T, 1],
      [T + 10 * S, 2],
      [T + 20 * S, NaN, 'stale'],
      [T + 40 * S, 4],
    ]),
    series({ __name__: 'b' }, [[T, 7]]),
    series(
      { __name__: 'c' },
      [5, 15, 25, 35, 45, 55].map((s, i) => [T + s * S, [100, 110, 5, 15, 25, 35][i]]),
    ),
  ]);

  it('looks back 5 minutes, both ends included, and a stale marker ends a series', async () => {
    const at = async (q: string, t: number): Promise<Record<string, number>> =>
      values(await instantQuery(data, q, t));
    expect(await at('a', T + 15 * S)).toEqual({ '__name__=a': 2 });
    expect(await at('a', T + 20 * S)).toEqual({});
    expect(await at('a', T + 39 * S)).toEqual({});
    expect(await at('a', T + 40 * S)).toEqual({ '__name__=a': 4 });
    expect(await at('b', T + 5 * MIN)).toEqual({ '__name__=b': 7 });
    expect(await at('b', T + 5 * MIN + 1)).toEqual({});
    // Range vectors leave stale markers out.
    expect(await at('count_over_time(a[1m])', T + MIN)).toEqual({ '': 3 });
  });

  it('honours a configured lookback', async () => {
    expect(values(await instantQuery(data, 'b', T + 6 * MIN, { lookbackDelta: 10 * MIN }))).toEqual({
      '__name__=b': 7,
    });
  });

  it('extrapolates rate and increase as extrapolatedRate does, counting resets', async () => {
    // Samples 5 s in from both window ends, 10 s apart: extrapolated to the whole minute.
    // Increase: 35 - 100 + 110 (the reset) = 45 over 50 s, times 60/50.
    const r = values(await instantQuery(data, 'increase(c[1m])', T + MIN));
    expect(r['']).toBeCloseTo(54, 12);
    expect(values(await instantQuery(data, 'rate(c[1m])', T + MIN))['']).toBeCloseTo(0.9, 12);
    expect(values(await instantQuery(data, 'resets(c[1m])', T + MIN))).toEqual({ '': 1 });
  });

  it('aligns subquery steps to multiples of the step since the epoch', async () => {
    // [T+10s, T+70s] at 20 s steps: T+20s, T+40s, T+60s (T is a whole minute).
    const r = await instantQuery(data, 'c[1m:20s]', T + 70 * S);
    expect(r.resultType).toBe('matrix');
    if (r.resultType === 'matrix') expect(r.result[0].t).toEqual([T + 20 * S, T + 40 * S, T + 60 * S]);
  });

  it('answers each result type in its shape; range results sorted by labels', async () => {
    expect(await instantQuery(data, '1 + 1', T)).toEqual({ resultType: 'scalar', result: { t: T, v: 2 } });
    expect(await instantQuery(data, '"s"', T)).toEqual({ resultType: 'string', result: { t: T, v: 's' } });
    const r = await rangeQuery(data, '{__name__=~"b|a"}', T, T + 2 * MIN, MIN);
    expect(r.resultType === 'matrix' && r.result.map((s) => s.metric[0].value)).toEqual(['a', 'b']);
    expect((await failure(rangeQuery(data, 'a[1m]', T, T + MIN, MIN))).errorType).toBe('bad_data');
  });

  it('reports runtime errors as execution errors', async () => {
    const err = await failure(instantQuery(data, 'label_replace(a, "x", "$1", "y", "(")', T));
    expect(err.errorType).toBe('execution');
  });
});

class RecordingQueryable implements Queryable {
  readonly selects: { matchers: readonly Matcher[]; mint: number; maxt: number }[] = [];
  constructor(
    private readonly inner: Queryable,
    private readonly delay = 0,
  ) {}

  async select(matchers: readonly Matcher[], mint: number, maxt: number): Promise<SeriesSamples[]> {
    this.selects.push({ matchers, mint, maxt });
    if (this.delay > 0) await new Promise((r) => setTimeout(r, this.delay));
    return this.inner.select(matchers, mint, maxt);
  }
}

describe('reading storage', () => {
  const empty = new MemoryQueryable([]);

  it('reads each selector once, over what lookback, range, offset and subqueries reach', async () => {
    const q = new RecordingQueryable(empty);
    await rangeQuery(q, 'rate(x[5m] offset 1m) + max_over_time(y[10m:1m] offset 1h)', T, T + 30 * MIN, MIN);
    expect(q.selects.map(({ mint, maxt }) => [mint - T, maxt - T])).toEqual([
      [-6 * MIN, 29 * MIN],
      [-75 * MIN, -30 * MIN],
    ]);
  });

  it('reads a selector with @ at that time only', async () => {
    const q = new RecordingQueryable(empty);
    await rangeQuery(q, 'x @ 1700000000', T, T + 30 * MIN, MIN);
    expect(q.selects).toMatchObject([{ mint: 1_700_000_000_000 - 5 * MIN, maxt: 1_700_000_000_000 }]);
  });
});

describe('limits', () => {
  const many = (n: number, points: number): MemoryQueryable =>
    new MemoryQueryable(
      Array.from({ length: n }, (_, i) =>
        series(
          { __name__: 'm', i: String(i) },
          Array.from({ length: points }, (_, j) => [T + j * 15 * S, j]),
        ),
      ),
    );

  it('stops at the sample limit', async () => {
    const err = await failure(rangeQuery(many(10, 100), 'm', T, T + 10 * MIN, MIN, { maxSamples: 300 }));
    expect(err.errorType).toBe('execution');
    expect(err.message).toMatch(/too many samples/);
  });

  it('stops at the series limit', async () => {
    const options: QueryOptions = { maxSeries: 5 };
    expect((await failure(instantQuery(many(10, 4), 'm', T + 30 * S, options))).errorType).toBe('execution');
    expect(await instantQuery(many(10, 4), 'sum(m)', T + 30 * S, options)).toMatchObject({
      resultType: 'vector',
    });
  });

  it('times out at the deadline', async () => {
    const slow = new RecordingQueryable(many(1, 4), 30);
    const err = await failure(instantQuery(slow, 'm', T, { deadline: Date.now() + 10 }));
    expect(err.errorType).toBe('timeout');
  });

  it('yields to the event loop during a long evaluation', async () => {
    let turns = 0;
    const timer = setInterval(() => turns++, 0);
    try {
      await rangeQuery(many(200, 400), 'sum by (i) (rate(m[5m]))', T, T + 100 * MIN, 15 * S);
    } finally {
      clearInterval(timer);
    }
    expect(turns).toBeGreaterThan(0);
  });
});

describe('bounds on what a query may take', () => {
  const one = new MemoryQueryable([series({ __name__: 'm' }, [[T, 1]])]);
  const limits: QueryOptions = { maxSamples: 20_000_000 };

  /** Resident memory growth while `run` runs, sampled. */
  async function growth(run: () => Promise<unknown>): Promise<number> {
    const before = process.memoryUsage().rss;
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 5);
    try {
      await run().catch(() => undefined);
    } finally {
      clearInterval(sampler);
    }
    return Math.max(peak, process.memoryUsage().rss) - before;
  }

  // These allocated until the process aborted (`vector(1)[1y:1ms]` is 31.5 billion steps) or
  // took gigabytes before the limit answered.
  it.each([
    ['max_over_time(vector(1)[1y:1ms])', 'instant'],
    ['max_over_time(vector(1)[1d:1ms])', 'instant'],
    ['max_over_time(max_over_time(vector(1)[1d:1s])[100y:1s])', 'instant'],
    ['max_over_time(max_over_time(vector(1)[1d:1s])[100y:1s])', 'range'],
    ['sum_over_time(m[30d:1ms])', 'range'],
  ])('refuses %s (%s) before reading or evaluating anything', async (query, kind) => {
    const q = new RecordingQueryable(one);
    const started = Date.now();
    const run = () =>
      kind === 'instant'
        ? instantQuery(q, query, T, limits)
        : rangeQuery(q, query, T, T + 60 * MIN, MIN, limits);
    const err = await failure(run());
    expect(err.errorType).toBe('execution');
    expect(err.message).toBe('query processing would load too many samples into memory in query execution');
    expect(q.selects).toEqual([]);
    expect(Date.now() - started).toBeLessThan(1000);
    expect(await growth(run)).toBeLessThan(200 * 1024 * 1024);
  });

  it('refuses too many steps at the limit exactly: steps are points', async () => {
    // [T - 99 s, T] at 1 s: 100 steps.
    expect(
      await instantQuery(one, 'count_over_time(vector(1)[99s:1s])', T, { maxSamples: 200 }),
    ).toMatchObject({
      resultType: 'vector',
    });
    const err = await failure(instantQuery(one, 'count_over_time(vector(1)[99s:1s])', T, { maxSamples: 99 }));
    expect(err.errorType).toBe('execution');
  });

  it('counts the points held at once, as they are added, not one result at a time', async () => {
    // 100 steps: the literal 1 and vector(1) (200 points) fit in 250, adding the second literal
    // (300) does not, though no one result holds more than 100.
    const q = 'count_over_time((vector(1) + 1)[99s:1s])';
    expect(await instantQuery(one, q, T, { maxSamples: 400 })).toMatchObject({ resultType: 'vector' });
    expect((await failure(instantQuery(one, q, T, { maxSamples: 250 }))).errorType).toBe('execution');
    // Released once consumed: a long chain of small steps holds no more than a few results.
    const chain = Array(100).fill('vector(1)').join(' + ');
    expect(
      await instantQuery(one, `count_over_time((${chain})[99s:1s])`, T, { maxSamples: 400 }),
    ).toMatchObject({
      resultType: 'vector',
    });
  });

  it('ends evaluations whose times are too far out for a double to step through', async () => {
    // Near 1e20 ms adding 1,000 does not change a double (they are 16,384 apart there): a loop
    // adding the step up never ended. What it answers that far out matters less than that it does.
    expect(await instantQuery(one, 'count_over_time(vector(1)[1m:1s] @ 1e17)', T)).toMatchObject({
      resultType: 'vector',
    });
    expect(await instantQuery(one, 'm @ 1e17 offset -100000y', T)).toEqual({
      resultType: 'vector',
      result: [],
    });
  });

  it('stops when its signal fires: before starting, or while evaluating', async () => {
    const done = new AbortController();
    done.abort();
    const before = await failure(instantQuery(one, 'm', T, { signal: done.signal }));
    expect(before.errorType).toBe('canceled');
    expect(before.message).toBe('query was canceled in query execution');
    // About 6.6 billion window samples (half a minute or more): canceled after 100 ms.
    const abort = new AbortController();
    setTimeout(() => abort.abort(), 100);
    const started = Date.now();
    const during = await failure(
      rangeQuery(one, 'sum_over_time(vector(1)[7d:1s])', 0, 10_999_000, 1000, {
        ...limits,
        signal: abort.signal,
      }),
    );
    expect(during.errorType).toBe('canceled');
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('yields within one series whose windows are long, not only between series', async () => {
    let turns = 0;
    const timer = setInterval(() => turns++, 0);
    try {
      // One series, 50 steps of 1-day windows at 1 s: 4.3 million window samples.
      await rangeQuery(one, 'sum_over_time(vector(1)[1d:1s])', 0, 49_000, 1000, limits);
    } finally {
      clearInterval(timer);
    }
    expect(turns).toBeGreaterThan(10);
  });
});
