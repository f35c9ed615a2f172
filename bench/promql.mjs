// PromQL engine speed on in-memory data (no storage): the query shapes over 1,000 series
// × 24 h of 15 s samples, evaluated as range queries at a 60 s step. Needs `npm run build`.
import { instantQuery, rangeQuery } from '../dist/server/metric-store/promql/index.js';

const SERIES = 1000;
const HOUR = 3_600_000;
export const END = Math.floor(Date.UTC(2024, 0, 2) / 60_000) * 60_000;
export const START = END - 24 * HOUR;

function search(t, x) {
  let lo = 0;
  let hi = t.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (t[mid] < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** A minimal Queryable: every series always matches the name; select cuts the time range. */
export function memoryQueryable() {
  const series = [];
  for (let i = 0; i < SERIES; i++) {
    const n = (24 * HOUR) / 15_000 + 21;
    const t = new Float64Array(n);
    const v = new Float64Array(n);
    let value = 0;
    for (let j = 0; j < n; j++) {
      t[j] = START - 5 * 60_000 + j * 15_000 + (i % 15) * 1000;
      value = j % 2000 === 1999 ? 0 : value + ((i * 7919 + j * 104729) % 100);
      v[j] = value;
    }
    const labels = [
      { name: '__name__', value: 'x' },
      { name: 'instance', value: `i${i}` },
      { name: 'job', value: `job${i % 10}` },
    ];
    series.push({ labels, t, v });
  }
  return {
    async select(matchers, mint, maxt) {
      const out = [];
      for (const s of series) {
        const ok = matchers.every((m) => {
          const value = s.labels.find((l) => l.name === m.name)?.value ?? '';
          return m.type === '=' ? value === m.value : m.type === '!=' ? value !== m.value : true;
        });
        if (!ok) continue;
        const lo = search(s.t, mint);
        const hi = search(s.t, maxt + 1);
        out.push({ labels: s.labels, timestamps: s.t.subarray(lo, hi), values: s.v.subarray(lo, hi) });
      }
      return out;
    },
  };
}

async function time(label, run, repeat = 3) {
  const ms = [];
  let result;
  for (let i = 0; i < repeat; i++) {
    const started = process.hrtime.bigint();
    result = await run();
    ms.push(Number(process.hrtime.bigint() - started) / 1e6);
  }
  ms.sort((a, b) => a - b);
  const series = result.resultType === 'matrix' || result.resultType === 'vector' ? result.result.length : 1;
  return `| ${label} | ${ms[Math.floor(ms.length / 2)].toFixed(0)} | ${ms[0].toFixed(0)} | ${series} |`;
}

export async function promqlBench() {
  const q = memoryQueryable();
  const rows = [
    await time('query_range sum by (job) (rate(x[5m])), 1000 series, 24 h, 60 s step', () =>
      rangeQuery(q, 'sum by (job) (rate(x[5m]))', START, END, 60_000),
    ),
    await time('query_range rate(x{instance="i7"}[5m]), one series, 24 h, 60 s step', () =>
      rangeQuery(q, 'rate(x{instance="i7"}[5m])', START, END, 60_000),
    ),
    await time('query_range sum by (job) (x), 1000 series, 24 h, 60 s step', () =>
      rangeQuery(q, 'sum by (job) (x)', START, END, 60_000),
    ),
    await time('query_range x / on(instance) x, 1000 series, 6 h, 60 s step', () =>
      rangeQuery(q, 'x / on(instance) x', END - 6 * HOUR, END, 60_000),
    ),
    await time('query sum by (job) (rate(x[5m])), 1000 series, instant', () =>
      instantQuery(q, 'sum by (job) (rate(x[5m]))', END),
    ),
  ];
  return [
    '## PromQL engine (in-memory data, no storage)',
    '',
    '| query | median ms | best ms | series |',
    '| --- | ---: | ---: | ---: |',
    ...rows,
    '',
  ].join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(await promqlBench());
