// Metric store chunk codec: bytes per sample and encode/decode throughput on realistic series
// (dist/server/metric-store/chunk.js; `npm run build` first). `node bench/metric-chunks.mjs`.
// Throughput is samples per second of this process's CPU time, best of 7 rounds, so that other
// work on a shared machine does not count against it.
import { decodeChunkInto, encodeChunk, readChunkHeader } from '../dist/server/metric-store/chunk.js';
import { bestCpuSeconds, random, table } from './lib.mjs';

const SERIES = Number(process.env.BENCH_CHUNK_SERIES ?? 2000);
const START = 1_700_000_000_000;

/** Scrape times every 15 s, each off by up to ±jitter ms. */
function times(rnd, n, jitter) {
  const ts = new Float64Array(n);
  const t0 = START + Math.floor(rnd() * 15_000);
  for (let i = 0; i < n; i++) ts[i] = t0 + 15_000 * i + Math.round((rnd() * 2 - 1) * jitter);
  return ts;
}

const SHAPES = {
  'counter, requests (+~150/scrape)': (rnd, i, prev) =>
    prev + Math.round(150 + 25 * (rnd() + rnd() + rnd() - 1.5)),
  'counter, bytes (+~1 MB/scrape)': (rnd, i, prev) => prev + Math.round(1e6 * (0.5 + rnd())),
  'counter, slow (+1 now and then)': (rnd, i, prev) => prev + (rnd() < 0.05 ? 1 : 0),
  'gauge, random walk (float)': (rnd, i, prev) => prev + (rnd() - 0.5) * 3.7,
  'gauge, percent 2 decimals': (rnd, i, prev) =>
    Math.round(Math.max(0, Math.min(100, prev + (rnd() - 0.5) * 8)) * 100) / 100,
  'constant (up = 1)': () => 1,
};

function series(shape, seed, n, jitter) {
  const rnd = random(seed);
  const ts = times(rnd, n, jitter);
  const vs = new Float64Array(n);
  let v = shape === 'constant (up = 1)' ? 1 : Math.floor(rnd() * 1e6) + 50;
  for (let i = 0; i < n; i++) vs[i] = v = SHAPES[shape](rnd, i, v);
  return { ts, vs };
}

function measure(data) {
  const samples = data.reduce((n, s) => n + s.ts.length, 0);
  let chunks = [];
  const encodeSeconds = bestCpuSeconds(() => (chunks = data.map((s) => encodeChunk(s.ts, s.vs))));
  const bytes = chunks.reduce((n, c) => n + c.length, 0);
  const outT = new Float64Array(data[0].ts.length);
  const outV = new Float64Array(data[0].ts.length);
  const decodeSeconds = bestCpuSeconds(() => {
    for (const c of chunks) decodeChunkInto(c, outT, outV, 0);
  });
  const encoding = readChunkHeader(chunks[0]).encoding === 2 ? 'DEC' : 'XOR';
  return {
    bytesPerSample: bytes / samples,
    encode: samples / encodeSeconds,
    decode: samples / decodeSeconds,
    encoding,
  };
}

export function metricChunksBench() {
  const rows = [];
  for (const jitter of [0, 3]) {
    for (const shape of Object.keys(SHAPES)) {
      const cells = [];
      for (const n of [120, 480]) {
        const data = Array.from({ length: Math.ceil((SERIES * 120) / n) }, (_, i) =>
          series(shape, i + 1, n, jitter),
        );
        cells.push(measure(data));
      }
      rows.push([
        `${shape}, jitter ±${jitter} ms`,
        cells[0].encoding,
        cells[0].bytesPerSample.toFixed(2),
        cells[1].bytesPerSample.toFixed(2),
        (cells[1].encode / 1e6).toFixed(1),
        (cells[1].decode / 1e6).toFixed(1),
      ]);
    }
  }
  const head = ['series (15 s scrape)', 'enc', 'B/sample @120', 'B/sample @480', 'encode M/s', 'decode M/s'];
  return table(
    `Chunk codec, ${SERIES * 120} samples per row (throughput in CPU time, 480-sample chunks)`,
    head,
    rows,
  );
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(metricChunksBench());
}
