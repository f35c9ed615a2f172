import type { PromMetadataEntry, PromQueryData } from '../../../contracts/api/prometheus.js';
import type { AppConfig } from '../../config/config.js';
import { isDataException } from '../../database/database-errors.js';
import { MetricInputError } from '../errors.js';
import { compareLabels, isValidLabelName } from '../labels.js';
import {
  instantQuery,
  parseSeriesSelector,
  PromqlError,
  rangeQuery,
  type QueryOptions,
  type QueryResult,
} from '../promql/index.js';
import type { LabelSet, Matcher } from '../series.js';
import type { MetricStoreService } from '../store/metric-store.service.js';
import { formatTimestamp, formatValue } from './format.js';
import {
  BadDataError,
  checkText,
  MAX_TIME_MS,
  MIN_TIME_MS,
  param,
  parseOptionalTime,
  parseRange,
  parseTimeout,
} from './params.js';

/** A query's limits (METRICS_QUERY_*): time, samples loaded (about 30 bytes each at the peak), series answered. */
export interface QueryLimits {
  timeoutMs: number;
  maxSamples: number;
  maxSeries: number;
}

/** A failure in the Prometheus API's own terms: its error type and HTTP status. */
export class PromApiError extends Error {
  constructor(
    readonly errorType: 'bad_data' | 'execution' | 'timeout' | 'canceled' | 'internal' | 'unavailable',
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

/** Prometheus's statuses; 499 (nginx's "client closed request") is its answer to a canceled query. */
const STATUS = { bad_data: 400, execution: 422, timeout: 503, canceled: 499 } as const;

/**
 * The API's failures from the parts below it; anything else is rethrown. Two more are the
 * request's doing, never a defect: a value PostgreSQL refuses (a data exception, SQLSTATE class 22)
 * is bad data, and a RangeError (an array, a string or the stack past what JavaScript allows,
 * e.g. an answer too large to write) an execution error, as the limits that should have caught it.
 */
export function apiError(err: unknown): PromApiError {
  if (err instanceof PromApiError) return err;
  if (err instanceof BadDataError) return new PromApiError('bad_data', err.message, 400);
  if (err instanceof MetricInputError) return new PromApiError('bad_data', err.message, 400);
  if (err instanceof PromqlError) return new PromApiError(err.errorType, err.message, STATUS[err.errorType]);
  if (isDataException(err))
    return new PromApiError('bad_data', 'a value in the request is not valid for its field', 400);
  if (err instanceof RangeError)
    return new PromApiError('execution', `query processing failed: ${err.message}`, 422);
  throw err;
}

/** The configured limits (AppConfig.metrics) as the API applies them. */
export const queryLimits = (config: AppConfig): QueryLimits => ({
  timeoutMs: config.metrics.queryTimeoutMs,
  maxSamples: config.metrics.queryMaxSamples,
  maxSeries: config.metrics.queryMaxSeries,
});

export type Form = Record<string, string | string[] | undefined>;

/** A parameter's (first) value; one with a NUL or invalid UTF-8 is refused, as it may reach the database. */
const one = (form: Form, name: string): string | undefined => {
  const given = form[name];
  const value = Array.isArray(given) ? given[0] : given;
  return typeof value === 'string' ? param(name, () => checkText(value)) : value;
};

/** `match[]` as Prometheus reads it: every value given (the form decoder may key it either way). */
const matchParams = (form: Form): string[] => {
  const value = form['match[]'] ?? form.match;
  const all = value === undefined ? [] : Array.isArray(value) ? value : [value];
  return all.map((text) => param('match[]', () => checkText(text)));
};

/** What the API reads from the store. */
export type MetricQuerySource = Pick<MetricStoreService, 'queryable' | 'seriesLabels' | 'metadata'>;

export type JsonLabels = Record<string, string>;
const labelsJson = (labels: LabelSet): JsonLabels => Object.fromEntries(labels.map((l) => [l.name, l.value]));

/**
 * The Prometheus HTTP API's query side over one owner's data: query, query_range, series, labels
 * and label values, with Prometheus 2.42's parameters, result shapes and errors.
 */
export class PrometheusApi {
  constructor(
    private readonly store: MetricQuerySource,
    private readonly owner: string,
    private readonly queryLimits: QueryLimits,
    private readonly now = Date.now(),
  ) {}

  /** An instant query; `signal` ends its evaluation (PromqlCanceledError) when it fires. */
  async query(form: Form, signal?: AbortSignal): Promise<QueryJson> {
    const query = one(form, 'query') ?? '';
    const time = parseOptionalTime('time', one(form, 'time'), this.now);
    const result = await instantQuery(
      this.store.queryable(this.owner),
      query,
      time,
      this.limits(form, signal),
    );
    return resultJson(result);
  }

  /** A range query; `signal` ends its evaluation (PromqlCanceledError) when it fires. */
  async queryRange(form: Form, signal?: AbortSignal): Promise<QueryJson> {
    const range = parseRange({ start: one(form, 'start'), end: one(form, 'end'), step: one(form, 'step') });
    const options = this.limits(form, signal);
    const result = await rangeQuery(
      this.store.queryable(this.owner),
      one(form, 'query') ?? '',
      range.start,
      range.end,
      range.step,
      options,
    );
    return resultJson(result);
  }

  async series(form: Form): Promise<JsonLabels[]> {
    const selectors = matchParams(form);
    if (selectors.length === 0) throw new PromApiError('bad_data', 'no match[] parameter provided', 400);
    const found = await this.matching(form, selectors);
    return limited(form, found.map(labelsJson));
  }

  async labels(form: Form): Promise<string[]> {
    const found = await this.matching(form, matchParams(form));
    const names = new Set(found.flatMap((labels) => labels.map((l) => l.name)));
    return limited(form, [...names].sort());
  }

  async labelValues(name: string, form: Form): Promise<string[]> {
    if (!isValidLabelName(name)) throw new PromApiError('bad_data', `invalid label name: "${name}"`, 400);
    const found = await this.matching(form, matchParams(form));
    const values = new Set(
      found.flatMap((labels) => labels.filter((l) => l.name === name).map((l) => l.value)),
    );
    return limited(form, [...values].sort());
  }

  /** `{metric: [{type, help, unit}]}` for the owner's metrics, optionally one (`metric`), at most `limit`. */
  async metadata(form: Form): Promise<Record<string, PromMetadataEntry[]>> {
    const rows = await this.store.metadata(this.owner, one(form, 'metric') || undefined);
    const limit = one(form, 'limit');
    const max = limit === undefined || limit === '' ? Infinity : Number(limit);
    if (Number.isNaN(max)) throw new BadDataError(`invalid parameter "limit": cannot parse "${limit}"`);
    const out: Record<string, { type: string; help: string; unit: string }[]> = {};
    for (const row of rows) {
      if (max > 0 && Object.keys(out).length >= max) break;
      out[row.metric] = [{ type: row.type, help: row.help, unit: row.unit }];
    }
    return out;
  }

  /** Label sets of the series with samples in [start, end] matching any selector (all series for none). */
  private async matching(form: Form, selectors: string[]): Promise<LabelSet[]> {
    const start = parseOptionalTime('start', one(form, 'start'), MIN_TIME_MS);
    const end = parseOptionalTime('end', one(form, 'end'), MAX_TIME_MS);
    const sets: Matcher[][] = selectors.length === 0 ? [[{ type: '=~', name: '__name__', value: '.+' }]] : [];
    for (const selector of selectors) sets.push(param('match[]', () => parseSelector(selector)));
    const byKey = new Map<string, LabelSet>();
    for (const matchers of sets)
      for (const labels of await this.store.seriesLabels(this.owner, matchers, start, end))
        byKey.set(JSON.stringify(labels), labels);
    return [...byKey.values()].sort(compareLabels);
  }

  private limits(form: Form, signal?: AbortSignal): QueryOptions {
    const given = one(form, 'timeout');
    const { timeoutMs, maxSamples, maxSeries } = this.queryLimits;
    const timeout = given
      ? Math.min(
          param('timeout', () => parseTimeout(given)),
          timeoutMs,
        )
      : timeoutMs;
    return { deadline: Date.now() + timeout, maxSamples, maxSeries, signal };
  }
}

function parseSelector(text: string): Matcher[] {
  try {
    return parseSeriesSelector(text);
  } catch (err) {
    if (err instanceof PromqlError) throw new BadDataError(err.message);
    throw err;
  }
}

function limited<T>(form: Form, items: T[]): T[] {
  const text = one(form, 'limit');
  if (text === undefined || text === '') return items;
  const limit = Number(text);
  if (!Number.isInteger(limit) || limit < 0)
    throw new BadDataError(`invalid parameter "limit": cannot parse "${text}"`);
  return limit === 0 ? items : items.slice(0, limit);
}

/** A query's data as the API writes it (the `data` of its envelope). */
export type QueryJson = PromQueryData;

/** A result as the API writes it: `[seconds, "value"]` points, labels as objects. */
export function resultJson(result: QueryResult): QueryJson {
  switch (result.resultType) {
    case 'scalar':
      return {
        resultType: 'scalar',
        result: [formatTimestamp(result.result.t), formatValue(result.result.v)],
      };
    case 'string':
      return { resultType: 'string', result: [formatTimestamp(result.result.t), result.result.v] };
    case 'vector':
      return {
        resultType: 'vector',
        result: result.result.map((s) => ({
          metric: labelsJson(s.metric),
          value: [formatTimestamp(s.t), formatValue(s.v)],
        })),
      };
    case 'matrix':
      return {
        resultType: 'matrix',
        result: result.result.map((s) => ({
          metric: labelsJson(s.metric),
          values: s.t.map((t, i) => [formatTimestamp(t), formatValue(s.v[i])]),
        })),
      };
  }
}
