import { Injectable } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import type { TunnelProviderName, TunnelState } from '../../contracts/api/tunnel.js';

/** The one row of tunnel_state: what operators asked for, and what the holding replica reported. */
export interface StoredTunnelState {
  desired: 'running' | 'stopped';
  customUrl: string | null;
  state: TunnelState;
  provider: TunnelProviderName | null;
  publicUrl: string | null;
  agentEndpoint: string | null;
  startedAt: Date | null;
  lastError: string | null;
  holder: string | null;
  reportedAt: Date | null;
}

export interface ReportedStatus {
  state: TunnelState;
  provider: TunnelProviderName;
  publicUrl: string | null;
  agentEndpoint: string | null;
  startedAt: Date | null;
  lastError: string | null;
}

export interface BaseRow {
  baseId: string;
  owner: string;
  createdAt: Date;
}

export interface PublishedService {
  subdomain: string;
  baseId: string;
  owner: string;
  stackId: string;
  service: string;
  /** The stack's name (read with the row; not stored twice). */
  stackName: string;
  workerId: string | null;
  targetHost: string;
  targetPort: number;
}

/** Lower-case letters and digits: a base id is one DNS label that never looks like a word. */
const BASE_ALPHABET = 'abcdefghijkmnpqrstuvwxyz23456789';

function newBaseId(): string {
  return [...randomBytes(10)].map((b) => BASE_ALPHABET[b % BASE_ALPHABET.length]).join('');
}

@Injectable()
export class TunnelRepository {
  constructor(private readonly dataSource: DataSource) {}

  async instanceId(): Promise<string> {
    const rows = await this.dataSource.query<{ instance_id: string }[]>(`SELECT instance_id FROM instance`);
    return rows[0].instance_id;
  }

  async state(): Promise<StoredTunnelState> {
    const rows = await this.dataSource.query<Record<string, unknown>[]>(
      `SELECT desired, custom_url, state, provider, public_url, agent_endpoint, started_at, last_error,
              holder, reported_at
         FROM tunnel_state WHERE id = 1`,
    );
    const r = rows[0];
    return {
      desired: r.desired as StoredTunnelState['desired'],
      customUrl: r.custom_url as string | null,
      state: r.state as TunnelState,
      provider: r.provider as TunnelProviderName | null,
      publicUrl: r.public_url as string | null,
      agentEndpoint: r.agent_endpoint as string | null,
      startedAt: r.started_at === null ? null : new Date(r.started_at as string),
      lastError: r.last_error as string | null,
      holder: r.holder as string | null,
      reportedAt: r.reported_at === null ? null : new Date(r.reported_at as string),
    };
  }

  /** Records what operators want; true when it changed. */
  async setDesired(desired: 'running' | 'stopped'): Promise<boolean> {
    // A CTE: TypeORM answers a bare UPDATE with [rows, count], a SELECT with plain rows.
    const rows = await this.dataSource.query<{ n: number }[]>(
      `WITH changed AS (
         UPDATE tunnel_state SET desired = $1, updated_at = now() WHERE id = 1 AND desired <> $1 RETURNING id
       ) SELECT count(*)::int AS n FROM changed`,
      [desired],
    );
    return rows[0].n > 0;
  }

  async setCustomUrl(url: string | null): Promise<void> {
    await this.dataSource.query(`UPDATE tunnel_state SET custom_url = $1, updated_at = now() WHERE id = 1`, [
      url,
    ]);
  }

  /** The holding replica's view, for every replica's status answers. */
  async report(holder: string, status: ReportedStatus): Promise<void> {
    await this.dataSource.query(
      `UPDATE tunnel_state
          SET state = $2, provider = $3, public_url = $4, agent_endpoint = $5, started_at = $6,
              last_error = $7, holder = $1, reported_at = now()
        WHERE id = 1`,
      [
        holder,
        status.state,
        status.provider,
        status.publicUrl,
        status.agentEndpoint,
        status.startedAt,
        status.lastError,
      ],
    );
  }

  /** The owner's base subdomain, created on first use. */
  async baseFor(owner: string): Promise<BaseRow> {
    for (;;) {
      const existing = await this.baseOf(owner);
      if (existing) return existing;
      // A clash of random ids (or another replica creating the owner's base) just retries.
      await this.dataSource.query(
        `INSERT INTO tunnel_bases (base_id, owner) VALUES ($1, $2) ON CONFLICT DO NOTHING`,
        [newBaseId(), owner],
      );
    }
  }

  async baseOf(owner: string): Promise<BaseRow | undefined> {
    const rows = await this.dataSource.query<{ base_id: string; owner: string; created_at: Date }[]>(
      `SELECT base_id, owner, created_at FROM tunnel_bases WHERE owner = $1`,
      [owner],
    );
    return (
      rows[0] && { baseId: rows[0].base_id, owner: rows[0].owner, createdAt: new Date(rows[0].created_at) }
    );
  }

  async services(baseId: string): Promise<PublishedService[]> {
    return this.publishedWhere('base_id', baseId);
  }

  /** The published service named `<service>-<stack>.<base_id>` (the host without TUNNEL_BASE_DOMAIN). */
  async serviceByHost(subdomain: string): Promise<PublishedService | undefined> {
    return (await this.publishedWhere('subdomain', subdomain))[0];
  }

  stackServices(stackId: string): Promise<PublishedService[]> {
    return this.publishedWhere('stack_id', stackId);
  }

  /** Which of these stacks have services published, one statement. */
  async stacksWithServices(stackIds: string[]): Promise<Set<string>> {
    if (stackIds.length === 0) return new Set();
    const rows = await this.dataSource.query<{ stack_id: string }[]>(
      `SELECT DISTINCT stack_id FROM tunnel_services WHERE stack_id = ANY($1::uuid[])`,
      [stackIds],
    );
    return new Set(rows.map((r) => r.stack_id));
  }

  /**
   * Makes `services` the published ones of the stack (a deploy's outcome), except names another stack
   * already holds: the first holder keeps a name. Returns the subdomains now published for the stack.
   */
  async replaceStackServices(
    stackId: string,
    services: Omit<PublishedService, 'stackName'>[],
  ): Promise<string[]> {
    return this.dataSource.transaction(async (m) => {
      await m.query(`DELETE FROM tunnel_services WHERE stack_id = $1`, [stackId]);
      const published: string[] = [];
      for (const s of services) {
        const rows = await m.query<{ subdomain: string }[]>(
          `INSERT INTO tunnel_services (subdomain, base_id, owner, stack_id, service, worker_id, target_host, target_port)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
           ON CONFLICT (subdomain) DO NOTHING RETURNING subdomain`,
          [s.subdomain, s.baseId, s.owner, s.stackId, s.service, s.workerId, s.targetHost, s.targetPort],
        );
        published.push(...rows.map((r) => r.subdomain));
      }
      return published;
    });
  }

  private async publishedWhere(
    column: 'base_id' | 'subdomain' | 'stack_id',
    value: string,
  ): Promise<PublishedService[]> {
    const rows = await this.dataSource.query<Record<string, unknown>[]>(
      `SELECT ts.*, s.name AS stack_name FROM tunnel_services ts JOIN stacks s ON s.id = ts.stack_id
        WHERE ts.${column} = $1 ORDER BY ts.subdomain`,
      [value],
    );
    return rows.map(toPublished);
  }
}

function toPublished(r: Record<string, unknown>): PublishedService {
  return {
    subdomain: r.subdomain as string,
    baseId: r.base_id as string,
    owner: r.owner as string,
    stackId: r.stack_id as string,
    service: r.service as string,
    stackName: r.stack_name as string,
    workerId: (r.worker_id as string | null) ?? null,
    targetHost: r.target_host as string,
    targetPort: Number(r.target_port),
  };
}
