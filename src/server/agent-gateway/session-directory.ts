import { Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { IDENTITY_REVOKED } from '../../contracts/agent-protocol/index.js';
import { Batcher, AGENT_GATHERING } from '../common/batcher.js';
import { uuidArray } from '../database/array-literals.js';
import { Leases } from '../common/leases.js';
import { every } from '../common/periodic.js';
import { SecretBox } from '../common/secret-box.js';
import { AgentSessions } from './agent-sessions.js';

/** The holder looks at its sessions this often... */
const RENEW_MS = 1_000;
/**
 * ...and renews the rows older than this: each row every 2-3 s rather than every second, a third
 * of the writes (at 10,000 agents a renewal of every row took PostgreSQL 40-55 ms a second, and
 * left as many dead row versions for its vacuum), while a live row is never older than about 3 s...
 */
const RENEW_AFTER_MS = 2_000;
/** ...and a session not renewed for this long belongs to a replica that died. */
export const SESSION_TTL_MS = 10_000;

/** An agent's session as every replica sees it. */
export interface SessionInfo {
  workerId: string;
  owner: string;
  /** The replica holding the stream (`Leases.holder`). */
  replica: string;
  /** Where the stream comes from. */
  remoteHost: string | null;
  /** Where peers probe the agent ('' when it has no probe listener). */
  probeAddress: string;
  /** This connection's probe key ('' with no listener). */
  probeKey: string;
}

interface SessionRow {
  worker_id: string;
  replica: string;
  owner: string;
  remote_host: string | null;
  probe_address: string;
  probe_key: string;
}

const probeKeyContext = (workerId: string): string => `probe-key:${workerId}`;

/**
 * Which replica holds each agent's stream, in the `agent_sessions` table: the replica that accepts
 * an agent's hello claims its row (a later claim by another replica wins), renews the rows of the
 * streams it holds every second and deletes a row when its stream ends. A replica killed outright
 * stops renewing; its rows count as gone after SESSION_TTL_MS. Every replica reads the live rows
 * every second, so `connected`, the address a worker connects from and the probe peers are the same
 * through any replica. A stream whose row another replica claimed since (the agent connected there)
 * is closed here.
 */
@Injectable()
export class SessionDirectory implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('agent-gateway');
  private live = new Map<string, SessionInfo>();
  /** Decrypted probe keys by sealed value: a key is decrypted once, not on every refresh. */
  private readonly keys = new Map<string, string>();
  private timer: NodeJS.Timeout | undefined;
  /**
   * The last claim this replica made for each worker, and when: what restores the row of a stream
   * still here whose row a stream's release deleted (see `refresh`). Forgotten once the worker has
   * no stream here and the claim is older than SESSION_TTL_MS.
   */
  private readonly claimed = new Map<string, { session: Omit<SessionInfo, 'replica'>; at: number }>();
  private readonly claims = new Batcher<Omit<SessionInfo, 'replica'>, void>(
    (sessions) => this.claimAll(sessions),
    AGENT_GATHERING,
  );
  private readonly releases = new Batcher<string, void>((ids) => this.releaseAll(ids), AGENT_GATHERING);
  private readonly holderReads = new Batcher<string, boolean>(
    (ids) => this.heldElsewhereAll(ids),
    AGENT_GATHERING,
  );

  constructor(
    private readonly dataSource: DataSource,
    private readonly leases: Leases,
    private readonly box: SecretBox,
    private readonly sessions: AgentSessions,
  ) {}

  get replica(): string {
    return this.leases.holder;
  }

  /** The first read completes before the service answers: a new replica knows every session at once. */
  async onModuleInit(): Promise<void> {
    await this.refresh();
    this.timer = every(this.logger, 'agent-sessions', RENEW_MS, () => this.refresh());
  }

  async onModuleDestroy(): Promise<void> {
    clearInterval(this.timer);
    // A stopping replica's agents are free at once, not after the TTL.
    await this.dataSource
      .query(`DELETE FROM agent_sessions WHERE replica = $1`, [this.replica])
      .catch((err: unknown) => this.logger.warn({ err }, 'agent sessions not released'));
  }

  /** Records that this replica holds the worker's stream from now on. */
  claim(session: Omit<SessionInfo, 'replica'>): Promise<void> {
    this.claimed.set(session.workerId, { session, at: Date.now() });
    return this.claims.call(session);
  }

  /**
   * The claims made meanwhile, in one statement (a fleet reconnecting at once claims its rows a
   * few hundred at a time). Of two claims of one worker in a batch, the later one is stored.
   */
  private async claimAll(sessions: Omit<SessionInfo, 'replica'>[]): Promise<void[]> {
    await this.store(sessions, 'take');
    return sessions.map(() => undefined);
  }

  /**
   * Writes the rows of `sessions`, this replica's. `take`: a hello's claim, which takes the row from
   * whichever replica had it. `restore`: a row lost while its stream is still here (below, in
   * `refresh`), written only if its worker still exists and no live replica has claimed it since.
   */
  private async store(sessions: Omit<SessionInfo, 'replica'>[], mode: 'take' | 'restore'): Promise<void> {
    const latest = new Map(sessions.map((session) => [session.workerId, session]));
    const rows = [...latest.values()].map((session) => ({
      session,
      sealed: session.probeKey ? this.box.encrypt(session.probeKey, probeKeyContext(session.workerId)) : '',
    }));
    const restore = mode === 'restore';
    await this.dataSource.query(
      `INSERT INTO agent_sessions (worker_id, replica, owner, remote_host, probe_address, probe_key)
       SELECT w, $2, o, h, a, k FROM unnest($1::uuid[], $3::text[], $4::text[], $5::text[], $6::text[])
         AS c(w, o, h, a, k)
        ${restore ? 'WHERE EXISTS (SELECT 1 FROM workers WHERE workers.id = c.w)' : ''}
       ON CONFLICT (worker_id) DO UPDATE SET replica = EXCLUDED.replica, owner = EXCLUDED.owner,
         remote_host = EXCLUDED.remote_host, probe_address = EXCLUDED.probe_address,
         probe_key = EXCLUDED.probe_key, connected_at = now(), seen_at = now()
        ${restore ? `WHERE agent_sessions.seen_at <= clock_timestamp() - ${SESSION_TTL_MS} * interval '1 millisecond'` : ''}`,
      [
        rows.map((r) => r.session.workerId),
        this.replica,
        rows.map((r) => r.session.owner),
        rows.map((r) => r.session.remoteHost),
        rows.map((r) => r.session.probeAddress),
        rows.map((r) => r.sealed),
      ],
    );
    for (const { session, sealed } of rows) {
      if (sealed) this.keys.set(sealed, session.probeKey);
      if (!restore) this.live.set(session.workerId, { ...session, replica: this.replica });
    }
  }

  /**
   * The stream ended here: the row goes, unless another replica has claimed it since, or the agent
   * has a newer stream here by the time the statement runs. Gathered with the other releases made
   * meanwhile (a fleet losing this replica at once).
   */
  release(workerId: string): Promise<void> {
    return this.releases.call(workerId);
  }

  private async releaseAll(workerIds: string[]): Promise<void[]> {
    // An agent that reconnected here while its old stream's release waited: the row is its new
    // stream's claim. (A release that runs while that stream's hello is between its claim and
    // taking the stream can still delete it; the renewal restores such a row: settleRowless.)
    const ids = [...new Set(workerIds)].filter((id) => !this.sessions.isConnected(id));
    if (ids.length === 0) return workerIds.map(() => undefined);
    await this.dataSource.query(
      `DELETE FROM agent_sessions WHERE replica = $1 AND worker_id = ANY($2::uuid[])`,
      [this.replica, uuidArray(ids)],
    );
    for (const id of ids) if (this.live.get(id)?.replica === this.replica) this.live.delete(id);
    return workerIds.map(() => undefined);
  }

  /**
   * Whether another replica holds the worker's stream now (read from the database, not the cache),
   * gathered with the other reads made meanwhile.
   */
  heldElsewhere(workerId: string): Promise<boolean> {
    return this.holderReads.call(workerId);
  }

  private async heldElsewhereAll(workerIds: string[]): Promise<boolean[]> {
    const rows = await this.dataSource.query<{ worker_id: string; replica: string }[]>(
      `SELECT worker_id, replica FROM agent_sessions
        WHERE worker_id = ANY($1::uuid[]) AND seen_at > clock_timestamp() - $2 * interval '1 millisecond'`,
      [uuidArray([...new Set(workerIds)]), SESSION_TTL_MS],
    );
    const holders = new Map(rows.map((row) => [row.worker_id, row.replica]));
    return workerIds.map((id) => {
      const holder = holders.get(id);
      return holder !== undefined && holder !== this.replica;
    });
  }

  /** Whether some replica holds the worker's stream: this one's own streams count at once. */
  isConnected(workerId: string): boolean {
    return this.sessions.isConnected(workerId) || this.live.has(workerId);
  }

  get(workerId: string): SessionInfo | undefined {
    return this.live.get(workerId);
  }

  /** Every live session, or an owner's. */
  all(owner?: string): SessionInfo[] {
    return [...this.live.values()].filter((s) => owner === undefined || s.owner === owner);
  }

  /** Renews this replica's rows, closes streams claimed elsewhere, and reads every live row. */
  async refresh(): Promise<void> {
    const local = this.sessions.connectedIds();
    await this.dataSource.query(
      `UPDATE agent_sessions SET seen_at = now()
        WHERE replica = $1 AND seen_at < now() - $2 * interval '1 millisecond'`,
      [this.replica, RENEW_AFTER_MS],
    );
    const rows = await this.dataSource.query<SessionRow[]>(
      `SELECT worker_id, replica, owner, remote_host, probe_address, probe_key FROM agent_sessions
        WHERE seen_at > clock_timestamp() - $1 * interval '1 millisecond'`,
      [SESSION_TTL_MS],
    );
    // This replica's rows, all of them live now that they are renewed.
    const renewed = new Set<string>();
    for (const row of rows) if (row.replica === this.replica) renewed.add(row.worker_id);
    // A row of this replica whose stream is gone (its release failed: the database out of reach,
    // or too busy for the pool's timeout when a fleet left at once) would be renewed here, and its
    // agent seen as connected through every replica, for as long as this replica runs: it goes.
    // Not a row claimed in the last SESSION_TTL_MS: its hello may still be on its way to the stream.
    const held = new Set(local);
    const stale = [...renewed].filter((id) => !held.has(id));
    const removed = new Set<string>();
    if (stale.length > 0) {
      // TypeORM answers a DELETE ... RETURNING as [rows, count].
      const [gone] = await this.dataSource.query<[{ worker_id: string }[], number]>(
        `DELETE FROM agent_sessions WHERE replica = $1 AND worker_id = ANY($2::uuid[])
            AND connected_at < clock_timestamp() - $3 * interval '1 millisecond'
         RETURNING worker_id`,
        [this.replica, uuidArray(stale), SESSION_TTL_MS],
      );
      for (const row of gone) removed.add(row.worker_id);
    }
    const next = new Map<string, SessionInfo>();
    const sealedNow = new Set<string>();
    for (const row of rows) {
      if (removed.has(row.worker_id) && row.replica === this.replica) continue;
      sealedNow.add(row.probe_key);
      next.set(row.worker_id, {
        workerId: row.worker_id,
        owner: row.owner,
        replica: row.replica,
        remoteHost: row.remote_host,
        probeAddress: row.probe_address,
        probeKey: this.probeKey(row),
      });
    }
    for (const sealed of this.keys.keys()) if (!sealedNow.has(sealed)) this.keys.delete(sealed);
    this.live = next;
    const rowless: string[] = [];
    for (const workerId of local) {
      if (renewed.has(workerId)) continue;
      const holder = next.get(workerId)?.replica;
      // Claimed by another replica since: the agent is there now and this stream is stale.
      if (holder !== undefined && holder !== this.replica && this.sessions.isConnected(workerId)) {
        this.logger.log({ worker_id: workerId, replica: holder }, 'agent connected to another replica');
        this.sessions.handOver(workerId, 'connected to another replica');
      } else if (holder === undefined) rowless.push(workerId);
    }
    const now = Date.now();
    for (const [workerId, { at }] of this.claimed)
      if (!held.has(workerId) && now - at > SESSION_TTL_MS) this.claimed.delete(workerId);
    if (rowless.length > 0) await this.settleRowless(rowless);
  }

  /**
   * Streams here whose row is gone. Gone with their worker (deleted through another replica: the
   * row cascades), they end as they would on the replica that deleted it; else the row is restored.
   */
  private async settleRowless(workerIds: string[]): Promise<void> {
    const present = new Set(
      (
        await this.dataSource.query<{ id: string }[]>(`SELECT id FROM workers WHERE id = ANY($1::uuid[])`, [
          workerIds,
        ])
      ).map((r) => r.id),
    );
    const restore: Omit<SessionInfo, 'replica'>[] = [];
    for (const workerId of workerIds) {
      if (!this.sessions.isConnected(workerId)) continue;
      if (present.has(workerId)) {
        // Still here, its worker too, but its row is gone: the release of this worker's previous
        // stream ran while this stream's hello was between its claim and taking the stream, and
        // deleted the new row. Other replicas would see the agent as not connected until it
        // reconnected.
        const claim = this.claimed.get(workerId);
        if (claim) restore.push(claim.session);
        continue;
      }
      this.logger.log({ worker_id: workerId }, 'worker deleted through another replica: stream closed');
      this.sessions.close(workerId, IDENTITY_REVOKED);
    }
    if (restore.length > 0) {
      this.logger.log({ workers: restore.length }, 'agent session rows lost to a release: claimed again');
      await this.store(restore, 'restore');
    }
  }

  private probeKey(row: SessionRow): string {
    if (!row.probe_key) return '';
    let key = this.keys.get(row.probe_key);
    if (key === undefined) {
      key = this.box.decrypt(row.probe_key, probeKeyContext(row.worker_id));
      this.keys.set(row.probe_key, key);
    }
    return key;
  }
}
