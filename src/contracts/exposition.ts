/**
 * The Prometheus text exposition format 0.0.4, read line by line: what the service's text import
 * and the agent's scrapes both parse (the agent may not import the service's code, so the reader
 * lives here). `# HELP` and `# TYPE` are handed on, other comments and blank lines skipped (`# EOF`
 * too), label values with \\, \" and \n escapes (other backslashes kept as written, as Prometheus
 * does), values as Go's ParseFloat reads decimal ones (NaN, +Inf, -Inf in any case), an optional
 * integer millisecond timestamp. CRLF line ends are accepted. What a label set must be (valid names,
 * no duplicates, limits) is the caller's rule.
 */

export interface ExpositionLabel {
  name: string;
  value: string;
}

/** The `# TYPE` words of the format. */
export type ExpositionType = 'counter' | 'gauge' | 'histogram' | 'summary' | 'untyped';

export interface ExpositionReader {
  /**
   * One sample; `labels` as written (without `__name__`), `timestamp` undefined when absent, `line`
   * the 1-based line number for the reader's own messages.
   */
  sample(
    name: string,
    labels: ExpositionLabel[],
    value: number,
    timestamp: number | undefined,
    line: number,
  ): void;
  help?(metric: string, text: string): void;
  type?(metric: string, type: ExpositionType): void;
}

export interface ExpositionOptions {
  /** Longer lines are refused (`tooLarge`). */
  maxLineLength: number;
  /** Timestamps beyond ± this many milliseconds are refused. */
  maxAbsTimestamp: number;
}

/** A line the reader refuses: `message` starts with `line N:`. */
export class ExpositionError extends Error {
  override name = 'ExpositionError';

  constructor(
    message: string,
    /** Over a size limit, rather than malformed. */
    readonly tooLarge = false,
  ) {
    super(message);
  }
}

/** For messages: a name or value shortened and quoted, so an error never echoes a megabyte. */
export function quoteForMessage(s: string): string {
  return JSON.stringify(s.length > 64 ? `${s.slice(0, 64)}…` : s);
}

const TYPES: ReadonlySet<string> = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);
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
    throw new ExpositionError(`line ${this.number}: ${message}`);
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

  labels(): ExpositionLabel[] {
    const labels: ExpositionLabel[] = [];
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

  /** A `# HELP` or `# TYPE` line (the `#` read); other comments are skipped. */
  comment(reader: ExpositionReader): void {
    this.pos++;
    this.blanks();
    const keyword = this.word();
    if (keyword !== 'HELP' && keyword !== 'TYPE') return;
    this.blanks();
    const metric = this.match(NAME, 'a metric name');
    if (this.pos < this.line.length && this.line[this.pos] !== ' ' && this.line[this.pos] !== '\t')
      this.fail(`invalid metric name in ${keyword}`);
    this.blanks();
    const rest = this.line.slice(this.pos);
    if (keyword === 'HELP') {
      reader.help?.(
        metric,
        rest.replace(/\\(\\|n)/g, (_, c) => (c === 'n' ? '\n' : '\\')),
      );
      return;
    }
    const type = rest.trimEnd();
    if (!TYPES.has(type)) this.fail(`invalid metric type ${quoteForMessage(type)}`);
    reader.type?.(metric, type as ExpositionType);
  }

  /** A sample line. */
  sample(reader: ExpositionReader, maxAbsTimestamp: number): void {
    const line = this.line;
    const name = this.match(NAME, 'a metric name');
    this.blanks();
    const labels = line[this.pos] === '{' ? this.labels() : [];
    this.blanks();
    const valueText = this.word();
    if (valueText === '') this.fail('expected a value');
    const value = parseValue(valueText);
    if (Number.isNaN(value) && !SPECIAL.test(valueText))
      this.fail(`invalid value ${quoteForMessage(valueText)}`);
    this.blanks();
    let timestamp: number | undefined;
    if (this.pos < line.length) {
      const stamp = this.word();
      timestamp = INTEGER.test(stamp) ? Number(stamp) : NaN;
      if (!(Math.abs(timestamp) <= maxAbsTimestamp))
        this.fail(
          `invalid timestamp ${quoteForMessage(stamp)}: an integer number of milliseconds is expected`,
        );
      this.blanks();
      if (this.pos < line.length)
        this.fail(`unexpected ${quoteForMessage(line.slice(this.pos))} after the timestamp`);
    }
    reader.sample(name, labels, value, timestamp, this.number);
  }
}

/**
 * Reads an exposition, handing each sample, HELP and TYPE to `reader` in order. Throws
 * ExpositionError on the first line it refuses (errors the reader throws go through as they are).
 */
export function readExposition(text: string, reader: ExpositionReader, options: ExpositionOptions): void {
  let start = 0;
  for (let number = 1; start < text.length || number === 1; number++) {
    let end = text.indexOf('\n', start);
    if (end < 0) end = text.length;
    const line = text.slice(start, end > start && text[end - 1] === '\r' ? end - 1 : end);
    start = end + 1;
    if (line.length > options.maxLineLength)
      throw new ExpositionError(`line ${number}: longer than ${options.maxLineLength} characters`, true);
    const p = new LineParser(line, number);
    p.blanks();
    if (p.pos === line.length) continue;
    if (line[p.pos] === '#') p.comment(reader);
    else p.sample(reader, options.maxAbsTimestamp);
  }
}
