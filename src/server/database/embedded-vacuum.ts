import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { InjectMetric } from '@willsoto/nestjs-prometheus';
import type { Counter } from 'prom-client';
import { DataSource } from 'typeorm';
import { firstThenEvery } from '../common/periodic.js';
import { AppConfig } from '../config/config.js';
import { METRIC } from '../metrics/metric-names.js';

/** What the database connection knows of the embedded database (nothing on PostgreSQL). */
export class EmbeddedDatabaseState {
  /** `created`: this process created the embedded database (its data directory was empty). */
  constructor(readonly created: boolean) {}
}

/** What a maintenance pass does to one table, and why. */
export interface VacuumTask {
  /** The table as `regclass` prints it: quoted, schema-qualified outside the search path. */
  table: string;
  vacuum: boolean;
  analyze: boolean;
  /**
   * `changes`: rows changed past autovacuum's thresholds; `wraparound`: its oldest unfrozen row is
   * older than autovacuum_freeze_max_age; `start`: the pass after start.
   */
  reason: 'changes' | 'wraparound' | 'start';
}

/** Thresholds a test may lower; otherwise the database's own autovacuum settings. */
export interface VacuumLimits {
  /** autovacuum_freeze_max_age: transactions since a table's oldest unfrozen row. */
  freezeMaxAge?: number;
  /** autovacuum_multixact_freeze_max_age. */
  multixactFreezeMaxAge?: number;
}

/**
 * The tables autovacuum would process now, by PostgreSQL 18's rules (`relation_needs_vacanalyze`)
 * and the database's own settings: vacuum when dead rows exceed
 * `autovacuum_vacuum_threshold + autovacuum_vacuum_scale_factor × rows` (capped at
 * `autovacuum_vacuum_max_threshold`), or rows inserted since the last vacuum exceed
 * `autovacuum_vacuum_insert_threshold + autovacuum_vacuum_insert_scale_factor × rows × the share
 * of pages not all-frozen`, or the table (or its TOAST table) is older than
 * `autovacuum_freeze_max_age` transactions (or multixacts); analyze when rows changed since the
 * last analyze exceed the analyze threshold. Every ordinary table, the system catalogs included:
 * their age holds the database's frozen horizon back as much as any other table's. pg_statistic
 * is never analyzed (autovacuum does not either). Not read: per-table storage parameters (the
 * service sets none) and a TOAST table's own dead rows (its table's vacuum covers it once the
 * table's own rows qualify). Oldest first, then most dead rows.
 */
export const DUE_TABLES = `
WITH s AS (
  SELECT current_setting('autovacuum_vacuum_threshold')::float8 AS vt,
         coalesce(current_setting('autovacuum_vacuum_max_threshold', true)::float8, -1) AS vmax,
         current_setting('autovacuum_vacuum_scale_factor')::float8 AS vs,
         current_setting('autovacuum_vacuum_insert_threshold')::float8 AS it,
         current_setting('autovacuum_vacuum_insert_scale_factor')::float8 AS iscale,
         current_setting('autovacuum_analyze_threshold')::float8 AS at,
         current_setting('autovacuum_analyze_scale_factor')::float8 AS ascale,
         coalesce($1::int, current_setting('autovacuum_freeze_max_age')::int) AS fmax,
         coalesce($2::int, current_setting('autovacuum_multixact_freeze_max_age')::int) AS mmax
), t AS (
  SELECT c.oid::regclass::text AS name, greatest(c.reltuples, 0) AS tuples,
         CASE WHEN c.relpages > 0 THEN 1 - least(c.relallfrozen::float8 / c.relpages, 1) ELSE 1 END AS unfrozen,
         pg_stat_get_dead_tuples(c.oid) AS dead, pg_stat_get_ins_since_vacuum(c.oid) AS inserted,
         pg_stat_get_mod_since_analyze(c.oid) AS modified, c.oid = 'pg_statistic'::regclass AS statistic,
         greatest(age(c.relfrozenxid), coalesce(age(tc.relfrozenxid), 0)) AS xid_age,
         greatest(mxid_age(c.relminmxid), coalesce(mxid_age(tc.relminmxid), 0)) AS mxid_age
    FROM pg_class c LEFT JOIN pg_class tc ON tc.oid = c.reltoastrelid
   WHERE c.relkind IN ('r', 'm') AND c.relpersistence <> 't'
), due AS (
  SELECT t.name, t.dead, t.xid_age,
         t.xid_age > s.fmax OR t.mxid_age > s.mmax AS wraparound,
         t.dead > CASE WHEN s.vmax >= 0 THEN least(s.vt + s.vs * t.tuples, s.vmax) ELSE s.vt + s.vs * t.tuples END
           OR (s.it >= 0 AND t.inserted > s.it + s.iscale * t.tuples * t.unfrozen) AS churn,
         NOT t.statistic AND t.modified > s.at + s.ascale * t.tuples AS stale
    FROM t CROSS JOIN s
)
SELECT name, wraparound, churn, stale FROM due
 WHERE wraparound OR churn OR stale
 ORDER BY xid_age DESC, dead DESC`;

/**
 * The service's own tables, as a condition on `pg_class c` joined to `pg_namespace n`: its schema's
 * ordinary tables and materialized views, no temporary ones (the debug bundle lists the same).
 */
export const SERVICE_TABLES = `n.nspname = current_schema() AND c.relkind IN ('r', 'm') AND c.relpersistence <> 't'`;

/** The tables of the service's own schema, for the pass after start. */
const OWN_TABLES = `
SELECT c.oid::regclass::text AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE ${SERVICE_TABLES} ORDER BY c.relname`;

type Query = (sql: string, params?: unknown[]) => Promise<unknown[]>;

/** The tables that need vacuuming or analyzing now (`DUE_TABLES`). */
export async function dueTables(query: Query, limits: VacuumLimits = {}): Promise<VacuumTask[]> {
  const rows = (await query(DUE_TABLES, [
    limits.freezeMaxAge ?? null,
    limits.multixactFreezeMaxAge ?? null,
  ])) as { name: string; wraparound: boolean; churn: boolean; stale: boolean }[];
  return rows.map((row) => ({
    table: row.name,
    vacuum: row.wraparound || row.churn,
    analyze: row.stale,
    reason: row.wraparound ? 'wraparound' : 'changes',
  }));
}

/**
 * The statements for a task, each outside a transaction block. A table past the freeze age gets
 * `VACUUM (FREEZE)`, as autovacuum's aggressive vacuum would: every row frozen, so its age starts
 * again from now. The vacuum and the analyze are two statements, so that the service's other
 * statements run between them (the embedded database runs one at a time).
 */
export function statementsOf(task: VacuumTask): string[] {
  return [
    ...(task.vacuum ? [`VACUUM ${task.reason === 'wraparound' ? '(FREEZE) ' : ''}${task.table}`] : []),
    ...(task.analyze ? [`ANALYZE ${task.table}`] : []),
  ];
}

/**
 * Autovacuum for the embedded database. PGlite runs PostgreSQL as one backend without its
 * background processes, so nothing there ever vacuums or analyzes: dead row versions pile up in
 * tables and indexes, the planner never gets statistics (it plans with default guesses, which chose
 * a plan 30-60 times slower for the dispatcher's claim once the jobs table held a few thousand
 * rows), and no row is ever frozen, while single-user mode does not stop writes before transaction
 * IDs wrap around (old rows would turn invisible). This does what autovacuum would: every
 * EMBEDDED_VACUUM_INTERVAL it asks which tables are past autovacuum's thresholds (`DUE_TABLES`) and
 * vacuums or analyzes each, one statement at a time through the pool, so requests run between them.
 *
 * PGlite loses its activity counters at every restart (they live in memory), so the first pass
 * after start vacuums and analyzes each of the service's tables once: rows that died before the
 * restart are counted nowhere else. Not after a start that created the database: nothing came
 * before it. A vacuum skips the pages it already found clean (the visibility
 * map is on disk), so that pass costs little on a database vacuumed before.
 *
 * On PostgreSQL this does nothing: its own autovacuum runs there.
 */
@Injectable()
export class EmbeddedVacuum implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('database');
  private timers: NodeJS.Timeout[] = [];
  /** The pass in progress, awaited at shutdown before the pool closes. */
  private running: Promise<void> | undefined;
  private stopped = false;
  /** Lowered by tests; the database's own settings otherwise. */
  limits: VacuumLimits = {};

  constructor(
    private readonly config: AppConfig,
    private readonly dataSource: DataSource,
    private readonly embedded: EmbeddedDatabaseState,
    @InjectMetric(METRIC.embeddedVacuums) private readonly operations: Counter<string>,
    @InjectMetric(METRIC.embeddedVacuumSeconds) private readonly seconds: Counter<string>,
  ) {}

  onApplicationBootstrap(): void {
    const intervalMs = this.config.embeddedVacuumIntervalMs;
    // PostgreSQL proper (DATABASE_URL) runs its own autovacuum.
    if (this.config.databaseUrl !== undefined || intervalMs === 0) return;
    // A database this process created has no activity from before it to catch up on: its counters
    // hold everything since initdb. The pass after start (which touches every table, and so grows
    // PGlite's memory: about 15 MiB in session 24's samples) is for a database opened again.
    const catchUp = !this.embedded.created;
    if (!catchUp)
      this.logger.log('embedded database created by this process: no maintenance pass after start');
    this.timers = firstThenEvery(
      this.logger,
      'embedded-vacuum',
      FIRST_VACUUM_AFTER_MS,
      intervalMs,
      () => this.pass(catchUp),
      () => this.pass(false),
    );
  }

  async onModuleDestroy(): Promise<void> {
    this.stopped = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers = [];
    while (this.running) await this.running.catch(() => undefined);
  }

  /**
   * One maintenance pass (`afterStart`: every table of the service's schema, whatever its
   * counters say); returns what it did. Passes never overlap: a second call waits for the first.
   */
  async pass(afterStart = false): Promise<VacuumTask[]> {
    while (this.running) await this.running.catch(() => undefined);
    const done: VacuumTask[] = [];
    // Shutting down: the pool is closing, and a pass queued behind the last one must not start.
    if (this.stopped) return done;
    const run = this.runPass(afterStart, done);
    this.running = run;
    try {
      await run;
    } finally {
      if (this.running === run) this.running = undefined;
    }
    return done;
  }

  private async runPass(afterStart: boolean, done: VacuumTask[]): Promise<void> {
    const query: Query = (sql, params) => this.dataSource.query(sql, params);
    const due = await dueTables(query, this.limits);
    if (afterStart) {
      const listed = new Set(due.map((task) => task.table));
      const own = (await query(OWN_TABLES)) as { name: string }[];
      for (const { name } of own) {
        if (!listed.has(name)) due.push({ table: name, vacuum: true, analyze: true, reason: 'start' });
      }
      for (const task of due) {
        task.vacuum = true;
        task.analyze ||= task.table !== 'pg_statistic';
      }
    }
    const started = performance.now();
    for (const task of due) {
      if (this.stopped) break;
      const t0 = performance.now();
      try {
        for (const statement of statementsOf(task)) await query(statement);
      } catch (err) {
        // One table's failure (dropped since the list was read) does not hold the others back.
        this.logger.warn({ err, table: task.table }, 'embedded database maintenance failed');
        continue;
      }
      const ms = performance.now() - t0;
      done.push(task);
      if (task.vacuum) this.operations.inc({ operation: 'vacuum' });
      if (task.analyze) this.operations.inc({ operation: 'analyze' });
      this.seconds.inc(ms / 1000);
      const fields = { table: task.table, vacuum: task.vacuum, analyze: task.analyze, reason: task.reason };
      // A long one held every other statement of the service back (one backend): worth an info line.
      if (task.reason === 'wraparound' || ms >= SLOW_MS) {
        this.logger.log({ ...fields, duration_ms: Math.round(ms) }, 'embedded database maintenance');
      } else {
        this.logger.debug(
          { ...fields, duration_ms: Math.round(ms * 10) / 10 },
          'embedded database maintenance',
        );
      }
    }
    if (afterStart && done.length > 0) {
      this.logger.log(
        { tables: done.length, duration_ms: Math.round(performance.now() - started) },
        'embedded database vacuumed and analyzed after start',
      );
    }
  }
}

/** The first pass after start: after start-up's own statements, before much else has happened. */
export const FIRST_VACUUM_AFTER_MS = 5000;
/** An operation at least this long is logged at info. */
const SLOW_MS = 1000;
