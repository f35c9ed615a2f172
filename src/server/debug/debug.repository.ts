import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { aliveReplicas } from '../agent-gateway/alive-replicas.js';

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
    const rows = await this.dataSource.query<{ name: string; version: string; size: string }[]>(
      `SELECT current_database() AS name, current_setting('server_version') AS version,
              pg_database_size(current_database()) AS size`,
    );
    return { name: rows[0].name, server_version: rows[0].version, size_bytes: Number(rows[0].size) };
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
