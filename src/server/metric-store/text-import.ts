/**
 * The Prometheus text exposition format 0.0.4, for `POST /prometheus/api/v1/import/prometheus` and
 * the service's own scrape: the lines read by src/contracts/exposition.ts (shared with the agent),
 * `# HELP` and `# TYPE` kept as metadata, label sets made canonical under the import's limits,
 * samples without a timestamp stamped `now`. Errors name the line.
 */
import { MAX_ABS_TIMESTAMP } from './chunk.js';
import { MetricInputError } from './errors.js';
import { ExpositionError, readExposition, type ExpositionType } from '../../contracts/exposition.js';
import { canonicalLabels, labelsKey, METRIC_NAME_LABEL, type LabelLimits } from './labels.js';
import type { MetricMetadata, MetricType } from './metadata.js';
import type { SeriesSamples } from './series.js';

export interface TextImportLimits extends LabelLimits {
  maxLineLength: number;
  maxSeries: number;
}

export const DEFAULT_TEXT_IMPORT_LIMITS: TextImportLimits = {
  maxLineLength: 64 * 1024,
  maxSeries: 100_000,
  maxLabels: 64,
  maxNameLength: 1024,
  maxValueLength: 16 * 1024,
};

export interface ParsedText {
  /** One entry per series, in order of first appearance; samples in the order written. */
  series: SeriesSamples[];
  metadata: MetricMetadata[];
  sampleCount: number;
}

const TYPES: Record<ExpositionType, MetricType> = {
  counter: 'counter',
  gauge: 'gauge',
  histogram: 'histogram',
  summary: 'summary',
  untyped: 'unknown',
};

/** Parses an exposition; samples without a timestamp get `now` (milliseconds). */
export function parseTextExposition(
  text: string,
  now: number,
  limits: TextImportLimits = DEFAULT_TEXT_IMPORT_LIMITS,
): ParsedText {
  const series = new Map<string, { labels: SeriesSamples['labels']; ts: number[]; vs: number[] }>();
  const metadata = new Map<string, MetricMetadata>();
  const meta = (metric: string) => {
    let m = metadata.get(metric);
    if (!m) metadata.set(metric, (m = { metric, type: 'unknown', help: '', unit: '' }));
    return m;
  };
  let sampleCount = 0;
  try {
    readExposition(
      text,
      {
        help: (metric, help) => (meta(metric).help = help),
        type: (metric, type) => (meta(metric).type = TYPES[type]),
        sample: (name, labels, value, timestamp, line) => {
          labels.push({ name: METRIC_NAME_LABEL, value: name });
          let set: SeriesSamples['labels'];
          try {
            set = canonicalLabels(labels, limits);
          } catch (err) {
            if (err instanceof MetricInputError) throw new MetricInputError(`line ${line}: ${err.message}`);
            throw err;
          }
          const key = labelsKey(set);
          let entry = series.get(key);
          if (!entry) {
            if (series.size >= limits.maxSeries)
              throw new MetricInputError(`line ${line}: more than ${limits.maxSeries} series`, 413);
            series.set(key, (entry = { labels: set, ts: [], vs: [] }));
          }
          entry.ts.push(timestamp ?? now);
          entry.vs.push(value);
          sampleCount++;
        },
      },
      { maxLineLength: limits.maxLineLength, maxAbsTimestamp: MAX_ABS_TIMESTAMP },
    );
  } catch (err) {
    if (err instanceof ExpositionError) throw new MetricInputError(err.message, err.tooLarge ? 413 : 400);
    throw err;
  }
  return {
    series: [...series.values()].map((s) => ({
      labels: s.labels,
      timestamps: Float64Array.from(s.ts),
      values: Float64Array.from(s.vs),
    })),
    metadata: [...metadata.values()],
    sampleCount,
  };
}
