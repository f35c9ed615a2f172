import { describe, expect, it } from 'vitest';
import { compileMatcher, matchesAll } from '../matchers.js';
import type { Matcher, SeriesSamples } from '../series.js';
import { lowerBound } from '../store/merge.js';
import { AppConfig } from '../../config/config.js';
import {
  apiError,
  PromApiError,
  PrometheusApi,
  queryLimits,
  type MetricQuerySource,
} from './prometheus-api.js';

/** The default limits (METRICS_QUERY_*). */
const LIMITS = queryLimits(new AppConfig({}));

// The query API's sample limit: a day of 1,000 series at 15 s loads, a query over the limit is a
// clean 422. The series share one day of samples (the limit counts what a query loads, not
// distinct memory), so the test stays small.
const END = Date.UTC(2026, 0, 2);
const DAY = 86_400_000;
const timestamps = Float64Array.from({ length: DAY / 15_000 }, (_, i) => END - DAY + 15_000 * (i + 1));
const values = Float64Array.from(timestamps, (_, i) => i * 3);

function store(series: number): MetricQuerySource {
  const all = Array.from({ length: series }, (_, i) => [
    { name: '__name__', value: 'x' },
    { name: 'instance', value: `i${i}` },
  ]);
  const select = (matchers: readonly Matcher[], mint: number, maxt: number): Promise<SeriesSamples[]> => {
    const compiled = matchers.map(compileMatcher);
    const from = lowerBound(timestamps, mint);
    const to = lowerBound(timestamps, maxt + 1);
    return Promise.resolve(
      all
        .filter((labels) => matchesAll(compiled, labels))
        .map((labels) => ({
          labels,
          timestamps: timestamps.subarray(from, to),
          values: values.subarray(from, to),
        })),
    );
  };
  return {
    queryable: () => ({ select }),
    seriesLabels: async (_owner, matchers, mint, maxt) =>
      (await select(matchers, mint, maxt)).map((s) => s.labels),
    metadata: () => Promise.resolve([]),
  };
}

const countDay = { query: 'count(count_over_time(x[1d]))', time: String(END / 1000) };

describe('query sample limit', () => {
  it('loads 1,000 series × 24 h at 15 s (5.8 million samples)', async () => {
    const answer = await new PrometheusApi(store(1000), 'default', LIMITS, END).query(countDay);
    expect(answer).toEqual({ resultType: 'vector', result: [{ metric: {}, value: [END / 1000, '1000'] }] });
  });

  it('refuses a query that would load more than the default METRICS_QUERY_MAX_SAMPLES: 422 execution', async () => {
    const series = Math.ceil(LIMITS.maxSamples / timestamps.length) + 1;
    const failure = await new PrometheusApi(store(series), 'default', LIMITS, END)
      .query(countDay)
      .catch((e: unknown) => e);
    const problem = apiError(failure);
    expect(problem).toBeInstanceOf(PromApiError);
    expect(problem).toMatchObject({ errorType: 'execution', status: 422 });
    expect(problem.message).toMatch(/too many samples/);
  });
});

describe('bad input answers 4xx', () => {
  const api = () => new PrometheusApi(store(1), 'default', LIMITS, END);
  const problem = async (run: Promise<unknown>) => apiError(await run.catch((e: unknown) => e));

  it('timeout=0 and negative are bad data (Prometheus 2.42 answers them 503)', async () => {
    for (const timeout of ['0', '-1'])
      expect(await problem(api().query({ query: 'x', timeout }))).toMatchObject({
        errorType: 'bad_data',
        status: 400,
        message: `invalid parameter "timeout": timeout must be greater than zero, got "${timeout}"`,
      });
  });

  it('a NUL in any parameter (the metadata metric goes to SQL) is bad data', async () => {
    expect(await problem(api().metadata({ metric: '\0' }))).toMatchObject({
      errorType: 'bad_data',
      status: 400,
      message: 'invalid parameter "metric": "\\u0000" contains a NUL character',
    });
    expect(await problem(api().series({ 'match[]': ['x', 'x{a="\0"}'] }))).toMatchObject({ status: 400 });
    expect(await problem(api().labels({ start: '\0' }))).toMatchObject({ status: 400 });
  });

  it('start and end: too large for a double is bad data, far is clamped (no doubled prefix)', async () => {
    expect(await problem(api().labels({ start: '1e309' }))).toMatchObject({
      message: 'invalid parameter "start": cannot parse "1e309" to a valid timestamp',
    });
    expect(await api().labels({ start: '-1e40', end: '1e40' })).toEqual(['__name__', 'instance']);
  });

  it('a data exception from PostgreSQL is bad data; a RangeError an execution error', () => {
    const pgError = Object.assign(new Error('invalid byte sequence for encoding "UTF8": 0x00'), {
      code: '22021',
    });
    expect(apiError({ driverError: pgError })).toMatchObject({ errorType: 'bad_data', status: 400 });
    expect(apiError(new RangeError('Invalid string length'))).toMatchObject({
      errorType: 'execution',
      status: 422,
      message: 'query processing failed: Invalid string length',
    });
    expect(() => apiError(new Error('a defect'))).toThrow('a defect');
  });
});
