/**
 * The Prometheus text exposition format 0.0.4, for `POST /prometheus/api/v1/import/prometheus`:
 * `# HELP` and `# TYPE` kept as metadata, other comments and blank lines skipped (`# EOF` too),
 * label values with \\, \" and \n escapes (other backslashes kept as written, as Prometheus does),
 * values as Go's ParseFloat reads decimal ones (NaN, +Inf, -Inf in any case), an optional integer
 * millisecond timestamp, `now` otherwise. Errors name the line. CRLF line ends are accepted.
 */
import { MAX_ABS_TIMESTAMP } from './chunk.js';
import { MetricInputError } from './errors.js';
import {
  canonicalLabels,
  labelsKey,
  METRIC_NAME_LABEL,
  quoteForMessage,
  type LabelLimits,
} from './labels.js';
import type { MetricMetadata, MetricType } from './metadata.js';
import type { Label, SeriesSamples } from './series.js';

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

const TYPES: Record<string, MetricType> = {
  counter: 'counter',
  gauge: 'gauge',
  histogram: 'histogram',
  summary: 'summary',
  untyped: 'unknown',
};
const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*/;
const DECIMAL = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;
const SPECIAL = /^[+-]?(?:inf|infinity|nan)$/i;
const INTEGER = /^[+-]?\d+$/;

/** Go's ParseFloat on the forms an exposition uses; NaN for anything else. */
function parseValue(text: string): number {
  if (DECIMAL.test(text)) return Number(text);
  if (SPECIAL.test(text)) return /nan/i.test(text) ? NaN : text.startsWith('-') ? -Infinity : Infinity;
  return Number.NaN;
}

class LineParser {
  pos = 0;
  constructor(
    readonly line: string,
    readonly number: number,
  ) {}

  fail(message: string): never {
    throw new MetricInputError(`line ${this.number}: ${message}`);
  }

  blanks(): void {
    while (this.line[this.pos] === ' ' || this.line[this.pos] === '\t') this.pos++;
  }

  /** A token up to the next blank (or the end). */
  word(): string {
    const start = this.pos;
    while (this.pos < this.line.length && this.line[this.pos] !== ' ' && this.line[this.pos] !== '\t')
      this.pos++;
    return this.line.slice(start, this.pos);
  }

  match(re: RegExp, what: string): string {
    const m = re.exec(this.line.slice(this.pos));
    if (!m) this.fail(`expected ${what} at ${quoteForMessage(this.line.slice(this.pos))}`);
    this.pos += m[0].length;
    return m[0];
  }

  /** A double-quoted label value with its escapes resolved. */
  quoted(): string {
    if (this.line[this.pos] !== '"') this.fail(`expected a quoted label value at column ${this.pos + 1}`);
    let out = '';
    for (let i = this.pos + 1; i < this.line.length; i++) {
      const c = this.line[i];
      if (c === '"') {
        this.pos = i + 1;
        return out;
      }
      if (c !== '\\') out += c;
      else {
        const next = this.line[++i];
        if (next === undefined) break;
        out += next === 'n' ? '\n' : next === '\\' || next === '"' ? next : `\\${next}`;
      }
    }
    return this.fail('label value is not terminated');
  }

  labels(): Label[] {
    const labels: Label[] = [];
    this.pos++; // '{'
    for (;;) {
      this.blanks();
      if (this.line[this.pos] === '}') break;
      const name = this.match(LABEL, 'a label name');
      this.blanks();
      if (this.line[this.pos] !== '=') this.fail(`expected '=' after label ${quoteForMessage(name)}`);
      this.pos++;
      this.blanks();
      labels.push({ name, value: this.quoted() });
      this.blanks();
      if (this.line[this.pos] === ',') this.pos++;
      else if (this.line[this.pos] !== '}') this.fail(`expected ',' or '}' at column ${this.pos + 1}`);
    }
    this.pos++;
    return labels;
  }
}

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
  let start = 0;
  for (let number = 1; start < text.length || number === 1; number++) {
    let end = text.indexOf('\n', start);
    if (end < 0) end = text.length;
    const line = text.slice(start, end > start && text[end - 1] === '\r' ? end - 1 : end);
    start = end + 1;
    if (line.length > limits.maxLineLength)
      throw new MetricInputError(`line ${number}: longer than ${limits.maxLineLength} characters`, 413);
    const p = new LineParser(line, number);
    p.blanks();
    if (p.pos === line.length) continue;
    if (line[p.pos] === '#') {
      p.pos++;
      p.blanks();
      const keyword = p.word();
      if (keyword !== 'HELP' && keyword !== 'TYPE') continue;
      p.blanks();
      const metric = p.match(NAME, 'a metric name');
      if (p.pos < line.length && line[p.pos] !== ' ' && line[p.pos] !== '\t')
        p.fail(`invalid metric name in ${keyword}`);
      p.blanks();
      const rest = line.slice(p.pos);
      if (keyword === 'HELP')
        meta(metric).help = rest.replace(/\\(\\|n)/g, (_, c) => (c === 'n' ? '\n' : '\\'));
      else {
        const type = TYPES[rest.trimEnd()];
        if (type === undefined) p.fail(`invalid metric type ${quoteForMessage(rest.trimEnd())}`);
        meta(metric).type = type;
      }
      continue;
    }
    const name = p.match(NAME, 'a metric name');
    p.blanks();
    const labels = line[p.pos] === '{' ? p.labels() : [];
    p.blanks();
    const valueText = p.word();
    if (valueText === '') p.fail('expected a value');
    const value = parseValue(valueText);
    if (Number.isNaN(value) && !SPECIAL.test(valueText))
      p.fail(`invalid value ${quoteForMessage(valueText)}`);
    p.blanks();
    let t = now;
    if (p.pos < line.length) {
      const stamp = p.word();
      t = INTEGER.test(stamp) ? Number(stamp) : NaN;
      if (!(Math.abs(t) <= MAX_ABS_TIMESTAMP))
        p.fail(`invalid timestamp ${quoteForMessage(stamp)}: an integer number of milliseconds is expected`);
      p.blanks();
      if (p.pos < line.length) p.fail(`unexpected ${quoteForMessage(line.slice(p.pos))} after the timestamp`);
    }
    labels.push({ name: METRIC_NAME_LABEL, value: name });
    let set: SeriesSamples['labels'];
    try {
      set = canonicalLabels(labels, limits);
    } catch (err) {
      if (err instanceof MetricInputError) p.fail(err.message);
      throw err;
    }
    const key = labelsKey(set);
    let entry = series.get(key);
    if (!entry) {
      if (series.size >= limits.maxSeries)
        throw new MetricInputError(`line ${number}: more than ${limits.maxSeries} series`, 413);
      series.set(key, (entry = { labels: set, ts: [], vs: [] }));
    }
    entry.ts.push(t);
    entry.vs.push(value);
    sampleCount++;
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
