/**
 * Remote write for the differential test, with production's encoder (remote-write-encode.ts), which
 * a real Prometheus and our write route both read; series labels written sorted by name.
 */
import { encodeWriteRequest } from '../../../src/server/metric-store/remote-write-encode.js';
import { sampleValues, type MemorySeries } from './memory-queryable.js';

const toWire = (series: MemorySeries[]) =>
  series
    .filter((s) => s.samples.length > 0)
    .map((s) => ({
      labels: Object.keys(s.labels)
        .sort()
        .map((name) => ({ name, value: s.labels[name] })),
      timestamps: s.samples.map(([t]) => t),
      values: sampleValues(s.samples),
    }));

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
      body: encodeWriteRequest(toWire(batch)),
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
