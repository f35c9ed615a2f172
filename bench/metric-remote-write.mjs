// Metric store ingestion: decoding Prometheus remote write bodies (snappy + protobuf) and turning
// them into write-ahead batches, in samples per second of CPU time (best of 7 rounds).
// `npm run build` first; `node bench/metric-remote-write.mjs`.
import { encodeBatch } from '../dist/server/metric-store/store/batch-rows.js';
import { decodeRemoteWrite } from '../dist/server/metric-store/remote-write.js';
import { encodeWriteRequest } from '../dist/server/metric-store/remote-write-encode.js';
import { bestCpuSeconds, table } from './lib.mjs';

const REQUESTS = Number(process.env.BENCH_RW_REQUESTS ?? 200);

/** Requests as a Prometheus scraping node exporters sends them: `perSeries` samples per series. */
function requests(seriesPerRequest, perSeries) {
  const out = [];
  for (let r = 0; r < REQUESTS; r++) {
    const series = [];
    for (let s = 0; s < seriesPerRequest; s++) {
      const host = (r * seriesPerRequest + s) % 1000;
      const labels = [
        {
          name: '__name__',
          value: ['node_cpu_seconds_total', 'node_network_receive_bytes_total', 'node_load1'][s % 3],
        },
        { name: 'cpu', value: String(s % 16) },
        { name: 'instance', value: `10.0.${host >> 8}.${host & 255}:9100` },
        { name: 'job', value: 'node' },
        { name: 'mode', value: ['idle', 'user', 'system', 'iowait'][s % 4] },
      ];
      const timestamps = Array.from(
        { length: perSeries },
        (_, i) => 1_700_000_000_000 + r * 15_000 + i * 15_000,
      );
      const values = Array.from(
        { length: perSeries },
        (_, i) => Math.round((r * 17.3 + s * 3.1 + i) * 100) / 100,
      );
      series.push({ labels, timestamps, values });
    }
    out.push(encodeWriteRequest(series));
  }
  return out;
}

export function metricRemoteWriteBench() {
  const rows = [];
  for (const [seriesPerRequest, perSeries] of [
    [500, 1],
    [2000, 1],
    [100, 10],
  ]) {
    const bodies = requests(seriesPerRequest, perSeries).map((b) => Buffer.from(b));
    const samples = REQUESTS * seriesPerRequest * perSeries;
    const bytes = bodies.reduce((n, b) => n + b.length, 0);
    const decode = bestCpuSeconds(() => bodies.forEach((b) => decodeRemoteWrite(b)));
    let batchBytes = 0;
    const both = bestCpuSeconds(() => {
      batchBytes = 0;
      for (const b of bodies)
        batchBytes += encodeBatch(
          decodeRemoteWrite(b).series.map((s, i) => ({
            seriesId: i + 1,
            timestamps: s.timestamps,
            values: s.values,
          })),
        ).length;
    });
    rows.push([
      `${seriesPerRequest} series × ${perSeries}`,
      (bytes / samples).toFixed(1),
      (samples / decode / 1e6).toFixed(2),
      (samples / both / 1e6).toFixed(2),
      (batchBytes / samples).toFixed(1),
    ]);
  }
  const head = ['request', 'body B/sample', 'decode M samples/s', 'decode + batch M/s', 'batch B/sample'];
  return table(`Remote write ingestion, ${REQUESTS} requests per row (CPU time)`, head, rows);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(metricRemoteWriteBench());
}
