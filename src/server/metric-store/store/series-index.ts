import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { LabelSet, Matcher } from '../series.js';

/**
 * Taken by every transaction that inserts series (arbitrary but fixed, next to the other keys in
 * data-source.ts and the repositories). On the embedded database the socket server runs one
 * transaction at a time, which orders them the same way.
 */
export const SERIES_INSERT_LOCK_KEY = 726_352_634;

/** A series as the index keeps it. */
export interface IndexedSeries {
  id: number;
  owner: string;
  key: string;
  metricName: string;
  labels: LabelSet;
}

interface SeriesRow {
  id: string;
  owner: string;
  key: string;
  metric_name: string;
  labels: [string, string][];
}

/** A series to resolve: its canonical key and labels (see labels.ts). */
export interface SeriesIdentity {
  key: string;
  labels: LabelSet;
}

/**
 * Every series of the store, in memory on each replica (ids, owners, label sets), with its label
 * matchers run here rather than in SQL. Series rows are only ever added (retention prunes whole
 * series rarely) and committed in id order (SERIES_INSERT_LOCK_KEY), so a replica catches up by
 * reading the ids above the highest it has, once per query or write: one indexed range read,
 * usually empty.
 */
@Injectable()
export class SeriesIndex {
  private readonly byKey = new Map<string, IndexedSeries>();
  private readonly byName = new Map<string, Map<string, IndexedSeries[]>>();
  private maxId = 0;
  private catchingUp: Promise<void> | undefined;

  constructor(private readonly dataSource: DataSource) {}

  get size(): number {
    return this.byKey.size;
  }

  /** Reads the series other replicas (or this one) added since the last catch-up. */
  catchUp(): Promise<void> {
    this.catchingUp ??= this.readNew().finally(() => (this.catchingUp = undefined));
    return this.catchingUp;
  }

  /** The ids of these series of `owner`, creating the missing ones. */
  async resolve(owner: string, series: readonly SeriesIdentity[]): Promise<number[]> {
    let missing = series.filter((s) => !this.byKey.has(ownerKey(owner, s.key)));
    if (missing.length > 0) {
      await this.catchUp();
      missing = missing.filter((s) => !this.byKey.has(ownerKey(owner, s.key)));
    }
    if (missing.length > 0) {
      const unique = [...new Map(missing.map((s) => [s.key, s])).values()];
      // Under the lock, ids are drawn and committed in the same order across all writers: without
      // it a write drawing lower ids could commit after a catch-up had moved past them, and those
      // series would stay unseen (the write then fails, and reads miss them).
      await this.dataSource.transaction(async (m) => {
        await m.query('SELECT pg_advisory_xact_lock($1)', [SERIES_INSERT_LOCK_KEY]);
        await m.query(
          `INSERT INTO metric_series (owner, key, metric_name, labels)
           SELECT $1, k, n, l::jsonb FROM unnest($2::text[], $3::text[], $4::text[]) AS t (k, n, l)
           ON CONFLICT (owner, key) DO NOTHING`,
          [
            owner,
            unique.map((s) => s.key),
            unique.map((s) => metricNameOf(s.labels)),
            unique.map((s) => JSON.stringify(s.labels.map((l) => [l.name, l.value]))),
          ],
        );
      });
      // A catch-up already under way may have read before this insert committed: then one more.
      await this.catchUp();
      if (unique.some((s) => !this.byKey.has(ownerKey(owner, s.key)))) await this.catchUp();
    }
    return series.map((s) => {
      const found = this.byKey.get(ownerKey(owner, s.key));
      if (found === undefined) throw new Error(`series ${s.key} was not created`);
      return found.id;
    });
  }

  /** The owner's series matching every matcher (after a catch-up). */
  async select(
    owner: string,
    matchers: readonly Matcher[],
    matches: SeriesPredicate,
  ): Promise<IndexedSeries[]> {
    await this.catchUp();
    const names = this.byName.get(owner);
    if (names === undefined) return [];
    const name = matchers.find((m) => m.name === '__name__' && m.type === '=');
    const candidates = name === undefined ? [...names.values()].flat() : (names.get(name.value) ?? []);
    return candidates.filter((s) => matches(s.labels));
  }

  /** Forgets series deleted by retention (their rows are gone). */
  forget(ids: ReadonlySet<number>): void {
    for (const [key, series] of this.byKey) {
      if (!ids.has(series.id)) continue;
      this.byKey.delete(key);
      const list = this.byName.get(series.owner)?.get(series.metricName);
      if (list !== undefined) list.splice(list.indexOf(series), 1);
    }
  }

  private async readNew(): Promise<void> {
    for (;;) {
      const rows = await this.dataSource.query<SeriesRow[]>(
        `SELECT id, owner, key, metric_name, labels FROM metric_series WHERE id > $1 ORDER BY id LIMIT 10000`,
        [this.maxId],
      );
      for (const row of rows) this.add(row);
      if (rows.length < 10_000) return;
    }
  }

  private add(row: SeriesRow): void {
    const series: IndexedSeries = {
      id: Number(row.id),
      owner: row.owner,
      key: row.key,
      metricName: row.metric_name,
      labels: row.labels.map(([name, value]) => ({ name, value })),
    };
    this.maxId = Math.max(this.maxId, series.id);
    this.byKey.set(ownerKey(series.owner, series.key), series);
    let names = this.byName.get(series.owner);
    if (names === undefined) this.byName.set(series.owner, (names = new Map<string, IndexedSeries[]>()));
    const list = names.get(series.metricName);
    if (list === undefined) names.set(series.metricName, [series]);
    else list.push(series);
  }
}

export type SeriesPredicate = (labels: LabelSet) => boolean;

const ownerKey = (owner: string, key: string): string => `${owner}\u0000${key}`;

const metricNameOf = (labels: LabelSet): string => labels.find((l) => l.name === '__name__')?.value ?? '';
