import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { aliveReplicas } from '../agent-gateway/alive-replicas.js';
import { SERVICE_TABLES } from '../database/embedded-vacuum.js';

/** node-postgres's pool as TypeORM's postgres driver holds it (`driver.master`). */
interface PgPool {
  totalCount: number;
  idleCount: number;
  waitingCount: number;
  options?: { max?: number };
}

export interface DatabaseFacts {
  name: string;
  server_version: string;
  size_bytes: number;
  /** Transactions since the database's oldest unfrozen row (`age(datfrozenxid)`). */
  xid_age: number;
  /** The service's tables: size, live and dead rows, last vacuum and analyze (by anyone), age. */
  tables: TableFacts[];
}

/** What vacuum and analyze have done to one table (docs/operations.md, "Vacuum and statistics"). */
export interface TableFacts {
  name: string;
  /** Table, TOAST and indexes. */
  size_bytes: number;
  live_rows: number;
  dead_rows: number;
  /** The later of the last manual and automatic one (the embedded database's are manual); null: never. */
  last_vacuum: string | null;
  last_analyze: string | null;
  xid_age: number;
}

export interface PoolState {
  max: number | null;
  total: number;
  idle: number;
  waiting: number;
}

/** Replicas as the shared tables show them: who holds agent streams, who holds leases. */
export interface ReplicaSightings {
  sessions: { replica: string; agents: number }[];
  leases: { holder: string; names: string[] }[];
}

/** The database-wide facts the debug bundle reports; nothing here reads a tenant's rows. */
@Injectable()
export class DebugRepository {
  constructor(private readonly dataSource: DataSource) {}

  async database(): Promise<DatabaseFacts> {
    const rows = await this.dataSource.query<{ name: string; version: string; size: string; age: number }[]>(
      `SELECT d.datname AS name, current_setting('server_version') AS version,
              pg_database_size(d.oid) AS size, age(d.datfrozenxid) AS age
         FROM pg_database d WHERE d.datname = current_database()`,
    );
    const tables = await this.dataSource.query<
      {
        name: string;
        size: string;
        live: string;
        dead: string;
        vacuumed: Date | null;
        analyzed: Date | null;
        age: number;
      }[]
    >(
      `SELECT c.relname AS name, pg_total_relation_size(c.oid) AS size,
              pg_stat_get_live_tuples(c.oid) AS live, pg_stat_get_dead_tuples(c.oid) AS dead,
              greatest(pg_stat_get_last_vacuum_time(c.oid), pg_stat_get_last_autovacuum_time(c.oid)) AS vacuumed,
              greatest(pg_stat_get_last_analyze_time(c.oid), pg_stat_get_last_autoanalyze_time(c.oid)) AS analyzed,
              age(c.relfrozenxid) AS age
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE ${SERVICE_TABLES} ORDER BY c.relname`,
    );
    return {
      name: rows[0].name,
      server_version: rows[0].version,
      size_bytes: Number(rows[0].size),
      xid_age: Number(rows[0].age),
      tables: tables.map((t) => ({
        name: t.name,
        size_bytes: Number(t.size),
        live_rows: Number(t.live),
        dead_rows: Number(t.dead),
        last_vacuum: t.vacuumed === null ? null : new Date(t.vacuumed).toISOString(),
        last_analyze: t.analyzed === null ? null : new Date(t.analyzed).toISOString(),
        xid_age: Number(t.age),
      })),
    };
  }

  /** This replica's connection pool now; null when the driver keeps none we can read. */
  pool(): PoolState | null {
    const pool = (this.dataSource.driver as unknown as { master?: PgPool }).master;
    if (pool === undefined || typeof pool.totalCount !== 'number') return null;
    return {
      max: pool.options?.max ?? null,
      total: pool.totalCount,
      idle: pool.idleCount,
      waiting: pool.waitingCount,
    };
  }

  /** Replicas that renewed their liveness row within `sessionTtlMs` (with their agents), and holders of unexpired leases. */
  async replicaSightings(sessionTtlMs: number): Promise<ReplicaSightings> {
    const sessions = await this.dataSource.query<{ replica: string; agents: string }[]>(
      `WITH ${aliveReplicas('$1')}
       SELECT alive.replica, count(s.worker_id) AS agents
         FROM alive LEFT JOIN agent_sessions s ON s.replica = alive.replica
        GROUP BY alive.replica ORDER BY alive.replica`,
      [sessionTtlMs],
    );
    const leases = await this.dataSource.query<{ holder: string; names: string[] }[]>(
      `SELECT holder, array_agg(name ORDER BY name) AS names FROM leases
        WHERE expires_at >= clock_timestamp() GROUP BY holder ORDER BY holder`,
    );
    return {
      sessions: sessions.map((s) => ({ replica: s.replica, agents: Number(s.agents) })),
      leases,
    };
  }
}
