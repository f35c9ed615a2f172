import { metricName } from '../labels.js';
import { PostingsIndex } from '../postings.js';
import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { Label, LabelSet, Matcher } from '../series.js';

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
  /**
   * Per owner, by key. Not one map by owner and key joined: a write looks its series up by the keys
   * it was given, strings whose hash V8 keeps once computed; a joined key is a new string each
   * time (at 10,000 agents, 8,000 of them a second, each hashed over a hundred characters).
   */
  private readonly byKey = new Map<string, Map<string, IndexedSeries>>();
  private count = 0;
  private readonly byId = new Map<number, IndexedSeries>();
  /** Per owner: label name → value → series ids, so matchers select without a scan. */
  private readonly postings = new Map<string, PostingsIndex>();
  private maxId = 0;
  private catchingUp: Promise<void> | undefined;
  /**
   * One label object per name and value, shared by every series that has it, and one copy of each
   * owner and metric name: each series row comes with its own copies of them. A worker's four node
   * series share its `worker` label, and every worker's share their `__name__`s (about 0.6 KB per
   * agent; docs/benchmarks.md, session 21). Label sets are never changed in place.
   */
  private readonly labelObjects = new Map<string, Map<string, Label>>();
  private readonly names = new Map<string, string>();

  constructor(private readonly dataSource: DataSource) {}

  get size(): number {
    return this.count;
  }

  /** Reads the series other replicas (or this one) added since the last catch-up. */
  catchUp(): Promise<void> {
    this.catchingUp ??= this.readNew().finally(() => (this.catchingUp = undefined));
    return this.catchingUp;
  }

  /** The ids of these series of `owner`, creating the missing ones. */
  async resolve(owner: string, series: readonly SeriesIdentity[]): Promise<number[]> {
    const known = (key: string) => this.byKey.get(owner)?.get(key);
    let missing = series.filter((s) => known(s.key) === undefined);
    if (missing.length > 0) {
      await this.catchUp();
      missing = missing.filter((s) => known(s.key) === undefined);
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
            unique.map((s) => metricName(s.labels) ?? ''),
            unique.map((s) => JSON.stringify(s.labels.map((l) => [l.name, l.value]))),
          ],
        );
      });
      // A catch-up already under way may have read before this insert committed: then one more.
      await this.catchUp();
      if (unique.some((s) => known(s.key) === undefined)) await this.catchUp();
    }
    const ofOwner = this.byKey.get(owner);
    return series.map((s) => {
      const found = ofOwner?.get(s.key);
      if (found === undefined) throw new Error(`series ${s.key} was not created`);
      return found.id;
    });
  }

  /** The owner's series matching every matcher (after a catch-up); throws MetricInputError for a bad regex. */
  async select(owner: string, matchers: readonly Matcher[]): Promise<IndexedSeries[]> {
    await this.catchUp();
    const postings = this.postings.get(owner);
    if (postings === undefined) return [];
    return postings.select(matchers).map((id) => this.byId.get(id) as IndexedSeries);
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
      owner: this.shared(row.owner),
      key: row.key,
      metricName: this.shared(row.metric_name),
      labels: row.labels.map(([name, value]) => this.label(name, value)),
    };
    this.maxId = Math.max(this.maxId, series.id);
    let ofOwner = this.byKey.get(series.owner);
    if (ofOwner === undefined) this.byKey.set(series.owner, (ofOwner = new Map<string, IndexedSeries>()));
    if (!ofOwner.has(series.key)) this.count++;
    ofOwner.set(series.key, series);
    this.byId.set(series.id, series);
    let postings = this.postings.get(series.owner);
    if (postings === undefined) this.postings.set(series.owner, (postings = new PostingsIndex()));
    postings.add(series.id, series.labels);
  }

  /** The index's one copy of an owner or a metric name. */
  private shared(text: string): string {
    const known = this.names.get(text);
    if (known !== undefined) return known;
    this.names.set(text, text);
    return text;
  }

  /** The index's one label object for this name and value. */
  private label(name: string, value: string): Label {
    let values = this.labelObjects.get(name);
    if (values === undefined) this.labelObjects.set(name, (values = new Map<string, Label>()));
    let label = values.get(value);
    if (label === undefined) values.set(value, (label = { name, value }));
    return label;
  }
}
