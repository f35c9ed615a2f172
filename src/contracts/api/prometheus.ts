// The metric store's Prometheus HTTP API (/prometheus/api/v1): Prometheus's own envelopes and data,
// as Grafana and promtool read them (CONTRACT.md, "Metric store").

/** A series' labels: name → value. */
export type PromLabels = Record<string, string>;

/** A point as the API writes it: Unix seconds and the value as text (`"NaN"`, `"+Inf"` included). */
export type PromPoint = [number, string];

/** A query's data: the `data` of its envelope. */
export type PromQueryData =
  | { resultType: 'scalar' | 'string'; result: PromPoint }
  | { resultType: 'vector'; result: { metric: PromLabels; value: PromPoint }[] }
  | { resultType: 'matrix'; result: { metric: PromLabels; values: PromPoint[] }[] };

/** One metric family's metadata as its exposition declared it. */
export interface PromMetadataEntry {
  type: string;
  help: string;
  unit: string;
}

export interface PromBuildInfo {
  /** The Prometheus version whose API and PromQL this store answers as. */
  version: string;
  revision: string;
  branch: string;
  buildUser: string;
  buildDate: string;
  goVersion: string;
  application: string;
}

/** Prometheus's success envelope around an endpoint's data. */
type PromSuccess<T> = { status: 'success'; data: T };

export type PromQueryResponse = PromSuccess<PromQueryData>;
export type PromSeriesResponse = PromSuccess<PromLabels[]>;
/** Label names, or one label's values. */
export type PromStringsResponse = PromSuccess<string[]>;
export type PromMetadataResponse = PromSuccess<Record<string, PromMetadataEntry[]>>;
export type PromBuildInfoResponse = PromSuccess<PromBuildInfo>;
/** This store keeps no exemplars, rules or alerts: always empty. */
export type PromExemplarsResponse = PromSuccess<[]>;
export type PromRulesResponse = PromSuccess<{ groups: [] }>;
export type PromAlertsResponse = PromSuccess<{ alerts: [] }>;

export type PromErrorType = 'bad_data' | 'execution' | 'timeout' | 'internal' | 'unavailable';

/** Prometheus's error envelope: 400 bad_data, 422 execution, 503 timeout or unavailable, 500 internal. */
export interface PromErrorResponse {
  status: 'error';
  errorType: PromErrorType;
  error: string;
}

// The parameters, as query parameters (GET) or a form body (POST); times are RFC 3339 or Unix
// seconds, durations Prometheus durations (`5m`) or seconds.

/** `query`: an instant query. */
export interface PromInstantQueryRequest {
  /** The PromQL expression. */
  query: string;
  /** Evaluation time; now by default. */
  time?: string;
  /** Capped at METRICS_QUERY_TIMEOUT. */
  timeout?: string;
}

/** `query_range`: a range query. */
export interface PromRangeQueryRequest {
  query: string;
  start: string;
  end: string;
  /** Resolution: a duration or a number of seconds. */
  step: string;
  timeout?: string;
}

/** `series`, `labels` and `label/{name}/values`: series selectors and a time window. */
export interface PromSeriesRequest {
  /** Series selectors (repeat the parameter for several); `series` needs at least one. */
  'match[]'?: string[];
  start?: string;
  end?: string;
  /** At most this many answers; 0 or absent: all. */
  limit?: string;
}

/** `metadata`: one metric's or every metric's metadata. */
export interface PromMetadataRequest {
  metric?: string;
  limit?: string;
}
