/**
 * The differential test's data, generated from a fixed seed: counters with resets, gauges,
 * classic histograms (and broken ones), gaps longer than the lookback, stale markers, special
 * values, and label combinations for matching, grouping and label functions. Four hours from T0,
 * scrape times jittered as real scrapes are.
 */
import type { MemorySeries, Sample } from './memory-queryable.js';

export const T0 = 1_700_000_000_000;
export const SPAN = 4 * 3_600_000;
const MIN = 60_000;

function mulberry32(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const random = mulberry32(20230131);
const round = (x: number, digits = 3): number => Math.round(x * 10 ** digits) / 10 ** digits;

/** Scrape times every `interval` from a random phase, jittered, skipping [gapFrom, gapTo). */
function times(interval: number, gaps: [number, number][] = []): number[] {
  const out: number[] = [];
  const phase = Math.floor(random() * interval);
  for (let t = T0 + phase; t < T0 + SPAN; t += interval) {
    const at = t + Math.floor(random() * 400) - 200;
    if (!gaps.some(([from, to]) => at >= T0 + from && at < T0 + to)) out.push(at);
  }
  return out;
}

function counter(ts: number[], rate: number, resetChance: number): [number, number][] {
  let v = round(random() * 1000);
  return ts.map((t) => {
    v = random() < resetChance ? round(random() * 5) : round(v + random() * rate);
    return [t, v];
  });
}

function gauge(ts: number[], start: number, step: number): [number, number][] {
  let v = start;
  return ts.map((t) => {
    v = round(v + (random() - 0.5) * step);
    return [t, v];
  });
}

/** Ends the series with a stale marker at `at` and restarts it at `again` (if given). */
function withStale(samples: Sample[], at: number, again?: number): Sample[] {
  const before = samples.filter(([t]) => t < T0 + at);
  const after = again === undefined ? [] : samples.filter(([t]) => t >= T0 + again);
  return [...before, [T0 + at, NaN, 'stale'], ...after];
}

function histograms(out: MemorySeries[]): void {
  const bounds = ['0.05', '0.1', '0.25', '0.5', '1', '2.5', '5', '+Inf'];
  for (const job of ['api', 'web'])
    for (const instance of ['i0', 'i1']) {
      const ts = times(15_000, job === 'web' && instance === 'i1' ? [[90 * MIN, 100 * MIN]] : []);
      const counts = bounds.map(() => 0);
      let sum = 0;
      const series = bounds.map(() => [] as [number, number][]);
      const countSeries: [number, number][] = [];
      const sumSeries: [number, number][] = [];
      for (const t of ts) {
        for (let n = Math.floor(random() * 20); n > 0; n--) {
          const observed = random() ** 2 * 6;
          sum += observed;
          bounds.forEach((b, i) => {
            if (observed <= Number(b === '+Inf' ? Infinity : b)) counts[i]++;
          });
        }
        bounds.forEach((_, i) => series[i].push([t, counts[i]]));
        countSeries.push([t, counts[counts.length - 1]]);
        sumSeries.push([t, round(sum, 6)]);
      }
      const labels = { job, instance };
      bounds.forEach((le, i) =>
        out.push({
          labels: { __name__: 'request_duration_seconds_bucket', ...labels, le },
          samples: series[i],
        }),
      );
      out.push({ labels: { __name__: 'request_duration_seconds_count', ...labels }, samples: countSeries });
      out.push({ labels: { __name__: 'request_duration_seconds_sum', ...labels }, samples: sumSeries });
    }
  // Broken histograms: no +Inf bucket; counts that go down with le; the same bound written twice.
  const ts = times(30_000);
  const broken = (kind: string, le: string, f: (i: number) => number): MemorySeries => ({
    labels: { __name__: 'broken_bucket', kind, le },
    samples: ts.map((t, i) => [t, f(i)]),
  });
  out.push(
    broken('no_inf', '1', (i) => i),
    broken('no_inf', '2', (i) => 2 * i),
  );
  out.push(
    broken('non_monotonic', '1', (i) => 3 * i),
    broken('non_monotonic', '2', (i) => 2 * i),
  );
  out.push(broken('non_monotonic', '+Inf', (i) => 4 * i));
  out.push(
    broken('dup_le', '1', (i) => i),
    broken('dup_le', '1.0', (i) => i),
    broken('dup_le', '+Inf', (i) => 3 * i),
  );
  out.push(
    broken('bad_le', 'abc', (i) => i),
    broken('bad_le', '+Inf', (i) => 2 * i),
  );
  out.push(
    broken('zero', '0.5', () => 0),
    broken('zero', '+Inf', () => 0),
  );
}

export function generate(): MemorySeries[] {
  const out: MemorySeries[] = [];
  for (const job of ['api', 'web', 'db'])
    for (const instance of ['i0', 'i1', 'i2'])
      for (const method of ['GET', 'POST'])
        for (const code of ['200', '500']) {
          const gaps: [number, number][] = job === 'db' && instance === 'i2' ? [[60 * MIN, 80 * MIN]] : [];
          let samples: Sample[] = counter(times(15_000, gaps), code === '200' ? 20 : 2, 0.004);
          if (job === 'web' && instance === 'i1') samples = withStale(samples, 120 * MIN, 150 * MIN);
          if (job === 'api' && method === 'POST' && code === '500') samples = withStale(samples, 200 * MIN);
          out.push({ labels: { __name__: 'http_requests_total', job, instance, method, code }, samples });
        }
  for (const instance of ['i0', 'i1', 'i2'])
    for (const cpu of ['0', '1'])
      for (const mode of ['idle', 'user', 'system'])
        out.push({
          labels: { __name__: 'node_cpu_seconds_total', instance, cpu, mode },
          samples: counter(times(30_000), mode === 'idle' ? 30 : 8, 0.001),
        });
  for (const room of ['a', 'b', 'c', 'd'])
    for (const sensor of ['s1', 's2'])
      out.push({
        labels: { __name__: 'temperature_celsius', room, sensor },
        samples: gauge(times(60_000, room === 'd' ? [[30 * MIN, 45 * MIN]] : []), 10 + random() * 20, 3),
      });
  for (const job of ['api', 'web', 'db'])
    for (const instance of ['i0', 'i1', 'i2']) {
      out.push({
        labels: { __name__: 'memory_bytes', job, instance },
        samples: gauge(times(15_000), 1e9 + random() * 1e9, 4e7),
      });
      out.push({
        labels: { __name__: 'up', job, instance },
        samples: times(15_000).map((t) => [t, random() < 0.9 ? 1 : 0]),
      });
      out.push({
        labels: { __name__: 'build_info', job, instance, version: `1.${instance === 'i2' ? 1 : 0}.0` },
        samples: times(60_000).map((t) => [t, 1]),
      });
    }
  histograms(out);
  const special: Record<string, (i: number) => number> = {
    nan: () => NaN,
    inf: () => Infinity,
    neginf: () => -Infinity,
    zero: () => 0,
    neg: (i) => -1 - i / 10,
    mixed: (i) => [1, NaN, Infinity, -2, -Infinity, 0, 3.5][i % 7],
    huge: (i) => 1e300 * (1 + i),
    tiny: (i) => 1e-300 * (1 + i),
  };
  for (const [kind, f] of Object.entries(special))
    out.push({
      labels: { __name__: 'special_values', kind },
      samples: times(60_000).map((t, i) => [t, f(i)]),
    });
  for (const id of ['1', '2', '3', '4']) {
    const samples = gauge(times(20_000), 50, 10);
    const stale: Record<string, Sample[]> = {
      '1': withStale(samples, 30 * MIN, 31 * MIN),
      '2': withStale(withStale(samples, 100 * MIN, 140 * MIN), 180 * MIN),
      '3': withStale(samples, 61 * MIN),
      '4': samples.filter(([t]) => t < T0 + 45 * MIN || t > T0 + 170 * MIN),
    };
    out.push({ labels: { __name__: 'flappy', id }, samples: stale[id] });
  }
  for (const x of ['1', '2', '3']) {
    out.push({ labels: { __name__: 'a_metric', x, side: 'a' }, samples: gauge(times(30_000), 10, 4) });
    out.push({ labels: { __name__: 'b_metric', x, side: 'b' }, samples: gauge(times(30_000), 10, 4) });
  }
  for (const x of ['1', '2'])
    for (const name of ['dup_a', 'dup_b'])
      out.push({
        labels: { __name__: name, x },
        samples: gauge(times(60_000, name === 'dup_b' && x === '2' ? [[0, 2 * 60 * MIN]] : []), 5, 1),
      });
  // Same labels but the name, never at the same time: errors only where Prometheus checks a whole matrix.
  out.push({
    labels: { __name__: 'dup_c', x: '1' },
    samples: gauge(times(60_000, [[SPAN / 2, SPAN]]), 5, 1),
  });
  out.push({
    labels: { __name__: 'dup_d', x: '1' },
    samples: gauge(times(60_000, [[0, SPAN / 2 + 20 * MIN]]), 5, 1),
  });
  out.push({
    labels: { __name__: 'label_test', path: '/var/lib/data', version: '1.22.3', host: 'web-01.example.com' },
    samples: times(60_000).map((t, i) => [t, i]),
  });
  out.push({
    labels: { __name__: 'label_test', path: '/tmp', version: 'v2', host: 'db' },
    samples: times(60_000).map((t, i) => [t, i * 2]),
  });
  for (const id of ['1', '2'])
    out.push({
      labels: { __name__: 'sparse', id },
      samples: times(id === '1' ? 10 * MIN : 37 * MIN).map((t, i) => [t, round(i * 1.5 + random())]),
    });
  // On exact multiples of the step (the range query's steps and subquery steps land on them), with a
  // stale marker on a step and a gap of exactly the lookback.
  const minute = Math.ceil(T0 / MIN) * MIN;
  const aligned = (every: number): [number, number][] =>
    Array.from({ length: Math.floor((SPAN - MIN) / every) }, (_, i) => [
      minute + i * every,
      round(random() * 100),
    ]);
  out.push({
    labels: { __name__: 'aligned', kind: 'minute' },
    samples: withStale(aligned(MIN), 47 * MIN + minute - T0, 52 * MIN + minute - T0),
  });
  out.push({ labels: { __name__: 'aligned', kind: '15s' }, samples: aligned(15_000) });
  out.push({
    labels: { __name__: 'aligned', kind: 'gap' },
    samples: aligned(MIN).filter(([t]) => t <= minute + 100 * MIN || t >= minute + 110 * MIN),
  });
  out.push({ labels: { __name__: 'single_sample' }, samples: [[T0 + 100 * MIN, 42]] });
  out.push({
    labels: { __name__: 'timestamp_metric', kind: 'epoch' },
    samples: times(60_000).map((t, i) => [t, 1_600_000_000 + i * 86_400 * 7 + (i % 5) * 3_600]),
  });
  return out;
}
