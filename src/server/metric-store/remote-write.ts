/**
 * Prometheus remote write 1.0: a snappy-compressed (block format) protobuf `WriteRequest`
 * (prompb/remote.proto, types.proto) decoded straight from the wire with protobufjs's Reader, no
 * .proto at run time. Samples are kept, exemplars and native histograms counted and skipped,
 * metadata kept. Values are copied as their 8 wire bytes, so stale markers keep their exact bits.
 * Anything malformed is a MetricInputError saying what and where (the route answers 400, or 413
 * for a limit on size).
 *
 *   WriteRequest { repeated TimeSeries timeseries = 1; repeated MetricMetadata metadata = 3; }
 *   TimeSeries   { repeated Label labels = 1; repeated Sample samples = 2;
 *                  repeated Exemplar exemplars = 3; repeated Histogram histograms = 4; }
 *   Label        { string name = 1; string value = 2; }
 *   Sample       { double value = 1; int64 timestamp = 2; }
 *   MetricMetadata { MetricType type = 1; string metric_family_name = 2; string help = 4; string unit = 5; }
 */
import { isUtf8 } from 'node:buffer';
import protobuf from 'protobufjs/minimal.js';
import { MAX_ABS_TIMESTAMP } from './chunk.js';
import { MetricInputError } from './errors.js';
import { canonicalLabels, quoteForMessage } from './labels.js';
import { REMOTE_WRITE_TYPES, type MetricMetadata } from './metadata.js';
import type { Label, SeriesSamples } from './series.js';
import { uncompressSnappyBlock } from './snappy-block.js';

export interface RemoteWriteLimits {
  /** Decompressed body, checked against snappy's declared length before allocating. */
  maxBytes: number;
  maxSeries: number;
  maxLabelsPerSeries: number;
  maxLabelNameLength: number;
  maxLabelValueLength: number;
}

export const DEFAULT_REMOTE_WRITE_LIMITS: RemoteWriteLimits = {
  maxBytes: 64 * 1024 * 1024,
  maxSeries: 100_000,
  maxLabelsPerSeries: 64,
  maxLabelNameLength: 1024,
  maxLabelValueLength: 16 * 1024,
};

export interface DecodedWriteRequest {
  /** Labels canonical (labels.ts); a series may appear more than once, as the sender sent it. */
  series: SeriesSamples[];
  metadata: MetricMetadata[];
  sampleCount: number;
  /** Exemplars and native histogram samples received and not stored. */
  skipped: { exemplars: number; histograms: number };
}

/**
 * Short ASCII strings already seen, by a hash of their bytes: label names and most values recur
 * across the series of a request and across requests, and reusing the string saves its making.
 */
const internTable = new Map<number, string>();

function interned(buf: Buffer, start: number, end: number, hash: number): string {
  if (end - start > 64) return buf.toString('latin1', start, end);
  const hit = internTable.get(hash);
  if (hit !== undefined && hit.length === end - start) {
    let same = true;
    for (let i = 0; i < hit.length && same; i++) same = hit.charCodeAt(i) === buf[start + i];
    if (same) return hit;
  }
  const s = buf.toString('latin1', start, end);
  if (internTable.size >= 65_536) internTable.clear();
  internTable.set(hash, s);
  return s;
}

const LITTLE = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
const WIRE = ['varint', '64-bit', 'length-delimited', 'start-group', 'end-group', '32-bit', '6', '7'];

class Decoder {
  readonly r: protobuf.Reader;
  private ts = new Float64Array(1024);
  private vs = new Float64Array(1024);
  private vsBytes = new Uint8Array(this.vs.buffer);
  private n = 0;
  private readonly spans: { labels: Label[]; start: number; end: number }[] = [];
  readonly metadata: MetricMetadata[] = [];
  readonly skipped = { exemplars: 0, histograms: 0 };

  constructor(
    readonly buf: Buffer,
    private readonly limits: RemoteWriteLimits,
  ) {
    this.r = protobuf.Reader.create(buf);
  }

  /** The end of a length-delimited field starting at the reader's position. */
  private end(what: string): number {
    const len = this.r.uint32();
    const end = this.r.pos + len;
    if (end > this.r.len) throw new MetricInputError(`protobuf: ${what} runs past the end of the body`);
    return end;
  }

  private expect(wire: number, want: number, what: string): void {
    if (wire !== want)
      throw new MetricInputError(`protobuf: ${what} has wire type ${WIRE[wire]}, expected ${WIRE[want]}`);
  }

  /** `what` names the field in messages; `name` is the label whose value this is, if it is one. */
  private string(what: string, name?: string): string {
    const end = this.end(what);
    const start = this.r.pos;
    this.r.pos = end;
    const buf = this.buf;
    let ascii = true;
    let hash = end - start;
    for (let i = start; i < end; i++) {
      if (buf[i] > 0x7f) ascii = false;
      hash = Math.imul(hash ^ buf[i], 16777619);
    }
    if (ascii) return interned(buf, start, end, hash);
    if (!isUtf8(this.buf.subarray(start, end)))
      throw new MetricInputError(
        `${name === undefined ? what : `the value of label ${quoteForMessage(name)}`} is not valid UTF-8`,
      );
    return this.buf.toString('utf8', start, end);
  }

  /** An int64 varint as a number; times beyond ±2^52 ms are refused. */
  private int64(): number {
    const { buf } = this.r;
    let lo = 0;
    let hi = 0;
    let shift = 0;
    for (let i = 0; ; i++) {
      if (i === 10 || this.r.pos >= this.r.len) throw new MetricInputError('protobuf: bad int64 varint');
      const b = buf[this.r.pos++];
      if (shift < 28) lo |= (b & 0x7f) << shift;
      else if (shift === 28) {
        lo |= (b & 0x0f) << 28;
        hi = (b & 0x7f) >>> 4;
      } else hi |= (b & 0x7f) << (shift - 32);
      shift += 7;
      if (b < 0x80) break;
    }
    const value = hi < 0 ? -((~hi >>> 0) * 2 ** 32 + (~lo >>> 0) + 1) : (hi >>> 0) * 2 ** 32 + (lo >>> 0);
    if (!(Math.abs(value) <= MAX_ABS_TIMESTAMP)) throw new MetricInputError(`sample timestamp out of range`);
    return value;
  }

  private grow(): void {
    const ts = new Float64Array(this.ts.length * 2);
    ts.set(this.ts);
    const vs = new Float64Array(this.vs.length * 2);
    new Uint8Array(vs.buffer).set(this.vsBytes);
    [this.ts, this.vs, this.vsBytes] = [ts, vs, new Uint8Array(vs.buffer)];
  }

  private sample(end: number): void {
    if (this.n === this.ts.length) this.grow();
    let t = 0;
    const at = this.n * 8;
    this.vsBytes.fill(0, at, at + 8);
    while (this.r.pos < end) {
      const tag = this.r.uint32();
      if (tag >>> 3 === 1) {
        this.expect(tag & 7, 1, 'sample value');
        if (this.r.pos + 8 > end) throw new MetricInputError('protobuf: sample value runs past its sample');
        for (let k = 0; k < 8; k++) this.vsBytes[at + (LITTLE ? k : 7 - k)] = this.buf[this.r.pos + k];
        this.r.pos += 8;
      } else if (tag >>> 3 === 2) {
        this.expect(tag & 7, 0, 'sample timestamp');
        t = this.int64();
      } else this.r.skipType(tag & 7);
    }
    this.ts[this.n++] = t;
  }

  private label(end: number): Label {
    let name = '';
    let value = '';
    while (this.r.pos < end) {
      const tag = this.r.uint32();
      if (tag >>> 3 === 1) {
        this.expect(tag & 7, 2, 'label name');
        name = this.string('label name');
      } else if (tag >>> 3 === 2) {
        this.expect(tag & 7, 2, 'label value');
        value = this.string('label value', name);
      } else this.r.skipType(tag & 7);
    }
    return { name, value };
  }

  timeseries(end: number): void {
    if (this.spans.length >= this.limits.maxSeries)
      throw new MetricInputError(`more than ${this.limits.maxSeries} series in one request`, 413);
    const labels: Label[] = [];
    const start = this.n;
    while (this.r.pos < end) {
      const tag = this.r.uint32();
      const field = tag >>> 3;
      if (field === 1) {
        this.expect(tag & 7, 2, 'time series label');
        labels.push(this.label(this.end('label')));
      } else if (field === 2) {
        this.expect(tag & 7, 2, 'time series sample');
        this.sample(this.end('sample'));
      } else {
        if (field === 3) this.skipped.exemplars++;
        if (field === 4) this.skipped.histograms++;
        this.r.skipType(tag & 7);
      }
    }
    this.spans.push({ labels, start, end: this.n });
  }

  metadataEntry(end: number): void {
    const entry: MetricMetadata = { metric: '', type: 'unknown', help: '', unit: '' };
    while (this.r.pos < end) {
      const tag = this.r.uint32();
      const field = tag >>> 3;
      if (field === 1 && (tag & 7) === 0) entry.type = REMOTE_WRITE_TYPES[this.r.uint32()] ?? 'unknown';
      else if (field === 2 && (tag & 7) === 2) entry.metric = this.string('metadata metric family name');
      else if (field === 4 && (tag & 7) === 2) entry.help = this.string('metadata help');
      else if (field === 5 && (tag & 7) === 2) entry.unit = this.string('metadata unit');
      else this.r.skipType(tag & 7);
    }
    if (entry.metric !== '') this.metadata.push(entry);
  }

  request(): void {
    while (this.r.pos < this.r.len) {
      const tag = this.r.uint32();
      const field = tag >>> 3;
      if (field === 0) throw new MetricInputError('protobuf: field number 0');
      if (field === 1) {
        this.expect(tag & 7, 2, 'timeseries');
        this.timeseries(this.end('time series'));
      } else if (field === 3) {
        this.expect(tag & 7, 2, 'metadata');
        this.metadataEntry(this.end('metadata'));
      } else this.r.skipType(tag & 7);
    }
  }

  result(): DecodedWriteRequest {
    const { limits } = this;
    const options = {
      requireName: true,
      maxLabels: limits.maxLabelsPerSeries,
      maxNameLength: limits.maxLabelNameLength,
      maxValueLength: limits.maxLabelValueLength,
    };
    // A series that carried only what is skipped (native histograms) is left out, labels and all.
    const series = this.spans
      .filter(({ start, end }) => end > start)
      .map(({ labels, start, end }) => ({
        labels: canonicalLabels(labels, options),
        timestamps: this.ts.subarray(start, end),
        values: this.vs.subarray(start, end),
      }));
    return { series, metadata: this.metadata, sampleCount: this.n, skipped: this.skipped };
  }
}

/** Decodes a remote write body (as received: snappy block compressed). */
export function decodeRemoteWrite(
  body: Uint8Array,
  limits: RemoteWriteLimits = DEFAULT_REMOTE_WRITE_LIMITS,
): DecodedWriteRequest {
  const raw = uncompressSnappyBlock(body, limits.maxBytes);
  const decoder = new Decoder(Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength), limits);
  try {
    decoder.request();
  } catch (err) {
    if (err instanceof MetricInputError) throw err;
    // protobufjs's own errors: truncated varints, unknown wire types, nesting.
    throw new MetricInputError(`protobuf: ${(err as Error).message}`);
  }
  return decoder.result();
}
