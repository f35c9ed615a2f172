/**
 * A minimal Prometheus remote write 1.0 encoder for the differential test: WriteRequest protobuf
 * written by hand (so stale markers keep their exact NaN bits) and snappy block compression.
 * Independent of production's decoder, it feeds a real Prometheus and our write route alike.
 */
import { createRequire } from 'node:module';
import { isStaleMarker, STALE_NAN_BITS } from '../../../src/server/metric-store/series.js';
import type { MemorySeries } from './memory-queryable.js';

const snappy = createRequire(import.meta.url)('snappyjs') as { compress(input: Uint8Array): Uint8Array };
const utf8 = new TextEncoder();

class Writer {
  readonly bytes: number[] = [];

  varint(n: bigint | number): void {
    let v = BigInt(n);
    if (v < 0n) v += 1n << 64n;
    while (v >= 0x80n) {
      this.bytes.push(Number(v & 0x7fn) | 0x80);
      v >>= 7n;
    }
    this.bytes.push(Number(v));
  }

  field(num: number, wire: number): void {
    this.varint((num << 3) | wire);
  }

  lengthDelimited(num: number, payload: Uint8Array | number[]): void {
    this.field(num, 2);
    this.varint(payload.length);
    for (const b of payload) this.bytes.push(b);
  }
}

function encodeSeries(s: MemorySeries): number[] {
  const w = new Writer();
  const names = Object.keys(s.labels).sort();
  for (const name of names) {
    const label = new Writer();
    label.lengthDelimited(1, utf8.encode(name));
    label.lengthDelimited(2, utf8.encode(s.labels[name]));
    w.lengthDelimited(1, label.bytes);
  }
  const view = new DataView(new ArrayBuffer(8));
  for (const [t, v] of s.samples) {
    const sample = new Writer();
    if (isStaleMarker(v)) view.setBigUint64(0, STALE_NAN_BITS, true);
    else view.setFloat64(0, v, true);
    sample.field(1, 1);
    for (let i = 0; i < 8; i++) sample.bytes.push(view.getUint8(i));
    sample.field(2, 0);
    sample.varint(t);
    w.lengthDelimited(2, sample.bytes);
  }
  return w.bytes;
}

/** The snappy-compressed WriteRequest body for these series. */
export function encodeWriteRequest(series: MemorySeries[]): Uint8Array {
  const w = new Writer();
  for (const s of series) if (s.samples.length > 0) w.lengthDelimited(1, encodeSeries(s));
  return snappy.compress(Uint8Array.from(w.bytes));
}

/**
 * POSTs the series to a remote-write receiver in time order, a window at a time (Prometheus's head
 * refuses samples an hour older than its newest; we drop those older than METRICS_OOO_WINDOW).
 */
export async function remoteWrite(
  url: string,
  headers: Record<string, string>,
  series: MemorySeries[],
  from: number,
  to: number,
  window = 10 * 60_000,
): Promise<void> {
  for (let start = from; start < to; start += window) {
    const batch = series.map((s) => ({
      labels: s.labels,
      samples: s.samples.filter(([t]) => t >= start && t < Math.min(start + window, to)),
    }));
    const response = await fetch(url, {
      method: 'POST',
      body: encodeWriteRequest(batch),
      headers: {
        ...headers,
        'Content-Type': 'application/x-protobuf',
        'Content-Encoding': 'snappy',
        'X-Prometheus-Remote-Write-Version': '0.1.0',
      },
    });
    if (response.status !== 204) throw new Error(`remote write: ${response.status} ${await response.text()}`);
  }
}
