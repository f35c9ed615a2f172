import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { labelsKey, labelsFromRecord } from '../../src/server/metric-store/labels.js';
import { setStale, staleFlags, type SeriesSamples } from '../../src/server/metric-store/series.js';
import { Compactor, FOLD_EVERYTHING } from '../../src/server/metric-store/store/compactor.js';
import { Maintenance } from '../../src/server/metric-store/store/maintenance.js';
import {
  MetricStoreService,
  type IncomingSeries,
} from '../../src/server/metric-store/store/metric-store.service.js';
import { Retention } from '../../src/server/metric-store/store/retention.js';
import { SeriesIndex, type IndexedSeries } from '../../src/server/metric-store/store/series-index.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { holdMaintenanceLease } from '../support/maintenance-lease.js';

// The metric store's storage on the real database: durable batches, compaction into chunks,
// reads merging both, out-of-order and retention rules, owners apart.
const HOUR = 3_600_000;
// Recent: the background retention (2 days here) must not take the samples under test.
const NOW = Math.floor(Date.now() / HOUR) * HOUR;

/**
 * `stale`: indexes whose value becomes Prometheus's stale marker, written as bits into the
 * Float64Array (a marker held in a plain array may lose its NaN payload, series.ts).
 */
function series(
  labels: Record<string, string>,
  samples: [number, number][],
  stale: readonly number[] = [],
): IncomingSeries {
  const set = labelsFromRecord(labels);
  const values = Float64Array.from(samples, ([, v]) => v);
  for (const i of stale) setStale(values, i);
  return { key: labelsKey(set), labels: set, timestamps: samples.map(([t]) => t), values };
}

const pairs = (s: SeriesSamples | undefined): [number, number][] =>
  s === undefined ? [] : [...s.timestamps].map((t, i) => [t, s.values[i]]);

describe('metric store storage', () => {
  let t: TestApp;
  let store: MetricStoreService;
  let maintenance: Maintenance;
  beforeAll(async () => {
    t = await startTestApp({ env: { METRICS_RETENTION: '2d', METRICS_OOO_WINDOW: '10m' } });
    store = t.app.get(MetricStoreService);
    maintenance = t.app.get(Maintenance);
  });
  afterAll(async () => {
    await t.close();
  });

  const read = async (owner: string, name: string, mint = 0, maxt = NOW + HOUR) =>
    store.select(owner, [{ type: '=', name: '__name__', value: name }], mint, maxt);

  it('a write is readable at once, before and after compaction, bit for bit', async () => {
    const samples: [number, number][] = Array.from({ length: 1000 }, (_, i) => [
      NOW - HOUR * 3 + i * 10_000,
      i * 1.5,
    ]);
    samples.push([NOW - 1000, NaN], [NOW, NaN]);
    const result = await store.write(
      'default',
      [series({ __name__: 'up_total', job: 'a' }, samples, [1001])],
      NOW,
    );
    expect(result).toEqual({ stored: 1002, outOfOrder: 0, tooOld: 0 });
    const stale = (s: SeriesSamples) => [...(staleFlags(s.values) ?? [])].flatMap((f, i) => (f ? [i] : []));
    const before = await read('default', 'up_total');
    expect(before).toHaveLength(1);
    expect(pairs(before[0]).slice(0, 3)).toEqual(samples.slice(0, 3));
    expect(Number.isNaN(before[0].values[1000])).toBe(true);
    expect(stale(before[0])).toEqual([1001]);
    await maintenance.compactAll(FOLD_EVERYTHING);
    const [{ n }] = await t.app
      .get(DataSource)
      .query<{ n: number }[]>(`SELECT count(*)::int AS n FROM metric_batches`);
    expect(n).toBe(0);
    const after = await read('default', 'up_total');
    expect(pairs(after[0]).slice(0, 1000)).toEqual(samples.slice(0, 1000));
    expect(Number.isNaN(after[0].values[1000])).toBe(true);
    expect(stale(after[0])).toEqual([1001]);
    // Chunks per two-hour window: three hours of samples span two or three windows.
    const windows = await t.app.get(DataSource).query<unknown[]>(`SELECT 1 FROM metric_chunks`);
    expect(windows.length).toBeGreaterThanOrEqual(2);
  });

  it('values are kept bit for bit through an out-of-order write and an overlapping read', async () => {
    // Prometheus's exact StaleNaN (a signalling NaN) and another payload: as JS numbers they would
    // get the quiet bit, and on some engine paths lose the payload (series.ts).
    const STALE = 0x7ff0000000000002n;
    const OTHER = 0x7ff0000000000009n;
    const exact = (timestamps: number[], patterns: bigint[]): IncomingSeries => {
      const set = labelsFromRecord({ __name__: 'exact_bits', job: 'x' });
      return {
        key: labelsKey(set),
        labels: set,
        timestamps: Float64Array.from(timestamps),
        values: new Float64Array(BigUint64Array.from(patterns).buffer),
      };
    };
    const one = (v: number) => new BigUint64Array(Float64Array.of(v).buffer)[0];
    const bits = async () => {
      const [s] = await read('default', 'exact_bits');
      return [
        ...new BigUint64Array(
          s.values.buffer.slice(s.values.byteOffset, s.values.byteOffset + s.values.byteLength),
        ),
      ];
    };
    // One write carrying the series twice, out of order: merged and sorted before it is stored.
    await store.write(
      'default',
      [exact([NOW - 3000, NOW - 1000], [one(3), STALE]), exact([NOW - 4000, NOW - 2000], [OTHER, one(2)])],
      NOW,
    );
    expect(await bits()).toEqual([OTHER, one(3), one(2), STALE]);
    // A later batch overlapping the first: the read merges them, the later winning at NOW - 2000.
    await store.write('default', [exact([NOW - 2000, NOW - 500], [STALE, one(5)])], NOW);
    expect(await bits()).toEqual([OTHER, one(3), STALE, STALE, one(5)]);
    await maintenance.compactAll(FOLD_EVERYTHING);
    expect(await bits()).toEqual([OTHER, one(3), STALE, STALE, one(5)]);
  });

  it('reads clip to the range and select by every matcher kind', async () => {
    await store.write(
      'default',
      [
        series({ __name__: 'http_requests', code: '200', path: '/a' }, [
          [NOW - 60_000, 1],
          [NOW, 2],
        ]),
        series({ __name__: 'http_requests', code: '500', path: '/a' }, [[NOW, 3]]),
        series({ __name__: 'http_requests', code: '404' }, [[NOW, 4]]),
      ],
      NOW,
    );
    const clipped = await read('default', 'http_requests', NOW - 30_000, NOW);
    expect(clipped).toHaveLength(3);
    const byCode = (rows: SeriesSamples[]) =>
      rows.map((r) => r.labels.find((l) => l.name === 'code')?.value).sort();
    const name = { type: '=' as const, name: '__name__', value: 'http_requests' };
    expect(
      byCode(await store.select('default', [name, { type: '=~', name: 'code', value: '[45]..' }], 0, NOW)),
    ).toEqual(['404', '500']);
    expect(
      byCode(await store.select('default', [name, { type: '!=', name: 'code', value: '200' }], 0, NOW)),
    ).toEqual(['404', '500']);
    expect(
      byCode(await store.select('default', [name, { type: '!~', name: 'code', value: '2.*' }], 0, NOW)),
    ).toEqual(['404', '500']);
    // A missing label equals "": only the series without `path`.
    expect(
      byCode(await store.select('default', [name, { type: '=', name: 'path', value: '' }], 0, NOW)),
    ).toEqual(['404']);
  });

  it('the later write wins on equal timestamps, across batches and chunks', async () => {
    const id = { __name__: 'rewritten', job: 'x' };
    await store.write(
      'default',
      [
        series(id, [
          [NOW - 120_000, 1],
          [NOW - 60_000, 2],
        ]),
      ],
      NOW,
    );
    await maintenance.compactAll(FOLD_EVERYTHING);
    await store.write('default', [series(id, [[NOW - 60_000, 20]])], NOW);
    expect(pairs((await read('default', 'rewritten'))[0])).toEqual([
      [NOW - 120_000, 1],
      [NOW - 60_000, 20],
    ]);
    await maintenance.compactAll(FOLD_EVERYTHING);
    expect(pairs((await read('default', 'rewritten'))[0])).toEqual([
      [NOW - 120_000, 1],
      [NOW - 60_000, 20],
    ]);
  });

  it('a read keeps its batches when a concurrent read evicts them from the cache meanwhile', async () => {
    const release = await holdMaintenanceLease(t.app);
    const id = { __name__: 'cached', job: 'z' };
    await store.write('default', [series(id, [[NOW - 2 * HOUR, 1]])], NOW);
    await store.write('default', [series(id, [[NOW, 2]])], NOW);
    // The newer batch is cached, the older one not yet.
    expect(pairs((await read('default', 'cached', NOW - 60_000))[0])).toEqual([[NOW, 2]]);
    const db = t.app.get(DataSource);
    const query = db.query.bind(db);
    let meanwhile: Promise<unknown> | undefined;
    // While the full read fetches the older batch, a read of a time without batches evicts the cache.
    // Every argument passed on: a query inside a transaction (a write meanwhile) names its runner.
    db.query = (async (...args: Parameters<typeof query>) => {
      if (meanwhile === undefined && args[0].startsWith('SELECT id, data FROM metric_batches')) {
        meanwhile = read('default', 'cached', NOW - 30 * HOUR, NOW - 29 * HOUR);
        await meanwhile;
      }
      return query(...args);
    }) as typeof db.query;
    try {
      expect(pairs((await read('default', 'cached'))[0])).toEqual([
        [NOW - 2 * HOUR, 1],
        [NOW, 2],
      ]);
      expect(meanwhile).toBeDefined();
    } finally {
      db.query = query;
      await release();
    }
  });

  it('drops samples older than the out-of-order window or retention, and counts them', async () => {
    const id = { __name__: 'late', job: 'y' };
    await store.write('default', [series(id, [[NOW, 1]])], NOW);
    const late = await store.write(
      'default',
      [
        series(id, [
          [NOW - 5 * 60_000, 2],
          [NOW - 11 * 60_000, 3],
          [NOW - 3 * 86_400_000, 4],
        ]),
      ],
      NOW,
    );
    expect(late).toEqual({ stored: 1, outOfOrder: 1, tooOld: 1 });
    // A new series may start anywhere inside retention (backfill).
    const backfill = await store.write(
      'default',
      [series({ __name__: 'backfilled' }, [[NOW - 40 * HOUR, 7]])],
      NOW,
    );
    expect(backfill.stored).toBe(1);
  });

  it("merges a series named twice in one write, and drops an ordered series' too-old start", async () => {
    const twice = { __name__: 'twice', job: 'w' };
    const ordered = { __name__: 'ordered', job: 'w' };
    const result = await store.write(
      'default',
      [
        series(twice, [
          [NOW - 2_000, 1],
          [NOW, 2],
        ]),
        // Ascending, its first two samples beyond retention: only those are dropped.
        series(ordered, [
          [NOW - 4 * 86_400_000, 1],
          [NOW - 3 * 86_400_000, 2],
          [NOW - 1_000, 3],
          [NOW, 4],
        ]),
        // The same series again: its parts are merged, the later part winning at NOW.
        series(twice, [
          [NOW - 1_000, 3],
          [NOW, 4],
        ]),
      ],
      NOW,
    );
    expect(result).toEqual({ stored: 5, outOfOrder: 0, tooOld: 2 });
    expect(pairs((await read('default', 'twice'))[0])).toEqual([
      [NOW - 2_000, 1],
      [NOW - 1_000, 3],
      [NOW, 4],
    ]);
    expect(pairs((await read('default', 'ordered'))[0])).toEqual([
      [NOW - 1_000, 3],
      [NOW, 4],
    ]);
  });

  it('keeps owners apart: the same series name of another owner is another series', async () => {
    await store.write('acme', [series({ __name__: 'up_total', job: 'a' }, [[NOW, 12345.678]])], NOW);
    expect(pairs((await read('acme', 'up_total'))[0])).toEqual([[NOW, 12345.678]]);
    expect((await read('default', 'up_total'))[0].values).not.toContain(12345.678);
    expect(await read('nobody', 'up_total')).toEqual([]);
  });

  it('the series index holds one label object per name and value, shared by the series that have it', async () => {
    await store.write(
      'shared-labels',
      [
        series({ __name__: 'node_a', worker: 'w1' }, [[NOW, 1]]),
        series({ __name__: 'node_b', worker: 'w1' }, [[NOW, 2]]),
        series({ __name__: 'node_a', worker: 'w2' }, [[NOW, 3]]),
      ],
      NOW,
    );
    const index = t.app.get(SeriesIndex);
    const label = (s: IndexedSeries, name: string) => s.labels.find((l) => l.name === name);
    const w1 = await index.select('shared-labels', [{ type: '=', name: 'worker', value: 'w1' }]);
    expect(w1.map((s) => s.metricName).sort()).toEqual(['node_a', 'node_b']);
    expect(label(w1[0], 'worker')).toBe(label(w1[1], 'worker'));
    const a = await index.select('shared-labels', [{ type: '=', name: '__name__', value: 'node_a' }]);
    expect(a).toHaveLength(2);
    expect(label(a[0], '__name__')).toBe(label(a[1], '__name__'));
    expect(label(a[0], 'worker')).not.toBe(label(a[1], 'worker'));
    // Shared, and still each series' own labels.
    expect(a.map((s) => s.labels.map((l) => `${l.name}=${l.value}`).join(',')).sort()).toEqual([
      '__name__=node_a,worker=w1',
      '__name__=node_a,worker=w2',
    ]);
  });

  it('retention removes whole windows older than METRICS_RETENTION', async () => {
    await store.write('default', [series({ __name__: 'old' }, [[NOW - 40 * HOUR, 1]])], NOW);
    await maintenance.compactAll(FOLD_EVERYTHING);
    expect(await read('default', 'old')).toHaveLength(1);
    const round = await t.app.get(Retention).round(NOW + 10 * HOUR);
    expect(round.expired).toBeGreaterThanOrEqual(1);
    expect(await read('default', 'old')).toEqual([]);
  });

  it('a tick folds only settled batches of closed windows; the open window waits unless too many do', async () => {
    const release = await holdMaintenanceLease(t.app);
    const db = t.app.get(DataSource);
    const compactor = t.app.get(Compactor);
    const remaining = async (ids: number[]) =>
      (
        await db.query<{ id: string }[]>(`SELECT id FROM metric_batches WHERE id = ANY($1::bigint[])`, [ids])
      ).map((r) => Number(r.id));
    const newest = async () =>
      Number((await db.query<{ id: string }[]>(`SELECT max(id) AS id FROM metric_batches`))[0].id);
    try {
      const now = Date.now();
      await store.write('default', [series({ __name__: 'closed_window' }, [[now - 5 * HOUR, 1]])], now);
      const closed = await newest();
      await store.write('default', [series({ __name__: 'open_window' }, [[now, 1]])], now);
      const open = await newest();
      // Fresh: the closed window's batch has not settled, so nothing folds.
      const limit = await compactor.limit(now);
      expect(limit.closedBefore).toBe(Math.floor((now - 10 * 60_000) / (2 * HOUR)) * 2 * HOUR);
      await maintenance.compactAll(limit);
      expect(await remaining([closed, open])).toEqual([closed, open]);
      // Settled: the closed window folds into its chunk, the open one stays a batch.
      await maintenance.compactAll({ ...limit, settleMs: 0 });
      expect(await remaining([closed, open])).toEqual([open]);
      expect(pairs((await read('default', 'closed_window', 0, now))[0])).toEqual([[now - 5 * HOUR, 1]]);
      // Too many batches waiting in open windows: the oldest fold, the newest `keep` stay.
      for (const v of [2, 3])
        await store.write('default', [series({ __name__: 'open_window' }, [[now + v, v]])], now);
      const last = await newest();
      const capped = await compactor.limit(now, 2, 1);
      expect(capped.throughId).toBeGreaterThanOrEqual(open);
      expect(capped.throughId).toBeLessThan(last);
      await maintenance.compactAll(capped);
      expect(await remaining([open, last])).toEqual([last]);
      expect(pairs((await read('default', 'open_window', 0, now + 10))[0])).toEqual([
        [now, 1],
        [now + 2, 2],
        [now + 3, 3],
      ]);
      // Under the cap nothing open folds.
      expect((await compactor.limit(now, 1000, 200)).throughId).toBe(0);
    } finally {
      await release();
    }
  });

  it('vacuuming after compaction lets the batch table reuse its space', async () => {
    const release = await holdMaintenanceLease(t.app);
    const db = t.app.get(DataSource);
    const size = async () =>
      Number((await db.query<{ n: string }[]>(`SELECT pg_total_relation_size('metric_batches') AS n`))[0].n);
    // Forty batches of twenty series × 200 samples of noise, in a closed window.
    const writeRound = async (prefix: string) => {
      for (let b = 0; b < 40; b++)
        await store.write(
          'default',
          Array.from({ length: 20 }, (_, s) =>
            series(
              { __name__: `${prefix}_${b}`, s: String(s) },
              Array.from({ length: 200 }, (_, i) => [NOW - 20 * HOUR + i * 15_000, Math.random()]),
            ),
          ),
          NOW,
        );
    };
    try {
      await maintenance.compactAll(FOLD_EVERYTHING);
      await maintenance.vacuum();
      await writeRound('reuse_a');
      const first = await size();
      await maintenance.compactAll(FOLD_EVERYTHING);
      await maintenance.vacuum();
      await writeRound('reuse_b');
      const second = await size();
      // Without the vacuum the second round lands after the first's dead rows: twice the size.
      expect(second).toBeLessThan(first * 1.3);
    } finally {
      await release();
    }
  });
});
