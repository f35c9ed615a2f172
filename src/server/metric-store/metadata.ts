/** Metric metadata (type, help, unit per metric family), as the Prometheus metadata API serves it. */

export type MetricType =
  'counter' | 'gauge' | 'histogram' | 'gaugehistogram' | 'summary' | 'info' | 'stateset' | 'unknown';

export interface MetricMetadata {
  /** The metric family name (`http_requests` for `http_requests_bucket`...). */
  metric: string;
  type: MetricType;
  help: string;
  unit: string;
}

/** Remote write's MetricMetadata.MetricType enum, by number. */
export const REMOTE_WRITE_TYPES: readonly MetricType[] = [
  'unknown',
  'counter',
  'gauge',
  'histogram',
  'gaugehistogram',
  'summary',
  'info',
  'stateset',
];
