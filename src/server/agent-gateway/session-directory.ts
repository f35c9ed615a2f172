import { Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { IDENTITY_REVOKED } from '../../contracts/agent-protocol/index.js';
import { Batcher, AGENT_GATHERING } from '../common/batcher.js';
import { uuidArray } from '../database/array-literals.js';
import { prepared } from '../database/prepared-statements.js';
import { Leases } from '../common/leases.js';
import { every } from '../common/periodic.js';
import { SecretBox } from '../common/secret-box.js';
import { AgentSessions, idBits, type IdsFingerprint } from './agent-sessions.js';
import { aliveReplicas } from './alive-replicas.js';

/** A replica renews its liveness row and looks at the sessions this often... */
const RENEW_MS = 1_000;
/** ...and a session whose replica has not renewed its row for this long belongs to one that died. */
export const SESSION_TTL_MS = 10_000;
/** Liveness rows of replicas gone this long are deleted (their session rows count as dead anyway). */
const FORGET_REPLICA_MS = 24 * 3_600_000;

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
 * The directory's entries, which keep their own replica's entries summed up as
 * `AgentSessions.fingerprint` sums its streams, and the ids of the other replicas' entries: what
 * the renewal compares and replaces each second without a pass over every entry.
 */
class Entries {
  private readonly map = new Map<string, SessionInfo>();
  private readonly othersIds = new Set<string>();
  private ownCount = 0;
  private ownHead = 0;
  private ownTail = 0;

  constructor(private readonly replica: string) {}

  get(workerId: string): SessionInfo | undefined {
    return this.map.get(workerId);
  }

  has(workerId: string): boolean {
    return this.map.has(workerId);
  }

  values(): IterableIterator<SessionInfo> {
    return this.map.values();
  }

  /** The other replicas' entries' ids (a copy). */
  others(): string[] {
    return [...this.othersIds];
  }

  get own(): IdsFingerprint {
    return { count: this.ownCount, head: this.ownHead, tail: this.ownTail };
  }

  set(workerId: string, entry: SessionInfo): void {
    this.delete(workerId);
    this.map.set(workerId, entry);
    if (entry.replica === this.replica) this.count(workerId, 1);
    else this.othersIds.add(workerId);
  }

  delete(workerId: string): void {
    const entry = this.map.get(workerId);
    if (entry === undefined) return;
    this.map.delete(workerId);
    if (entry.replica === this.replica) this.count(workerId, -1);
    else this.othersIds.delete(workerId);
  }

  private count(workerId: string, sign: 1 | -1): void {
    const [head, tail] = idBits(workerId);
    this.ownCount += sign;
    this.ownHead += sign * head;
    this.ownTail += sign * tail;
  }
}

/**
 * Which replica holds each agent's stream, in the `agent_sessions` table: the replica that accepts
 * an agent's hello claims its row (a later claim by another replica wins) and deletes it when its
 * stream ends; it renews its own row in `agent_replicas` every second. A replica killed outright
 * stops renewing; its session rows count as gone after SESSION_TTL_MS. Every replica reads the live rows
 * every second, so `connected`, the address a worker connects from and the probe peers are the same
 * through any replica. A stream whose row another replica claimed since (the agent connected there)
 * is closed here.
 */
@Injectable()
export class SessionDirectory implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('agent-gateway');
  private live: Entries;
  /** Decrypted probe keys by sealed value: a key is decrypted once, not on every refresh. */
  private readonly keys = new Map<string, string>();
  private timer: NodeJS.Timeout | undefined;
  /** When this replica last deleted long-gone replicas' liveness rows. */
  private forgotAt = 0;
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
  ) {
    this.live = new Entries(this.replica);
  }

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
      .query(
        `WITH sessions AS (DELETE FROM agent_sessions WHERE replica = $1)
         DELETE FROM agent_replicas WHERE replica = $1`,
        [this.replica],
      )
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
      `${restore ? `WITH ${aliveReplicas(String(SESSION_TTL_MS))}` : ''}
       INSERT INTO agent_sessions (worker_id, replica, owner, remote_host, probe_address, probe_key)
       SELECT w, $2, o, h, a, k FROM unnest($1::uuid[], $3::text[], $4::text[], $5::text[], $6::text[])
         AS c(w, o, h, a, k)
        ${restore ? 'WHERE EXISTS (SELECT 1 FROM workers WHERE workers.id = c.w)' : ''}
       ON CONFLICT (worker_id) DO UPDATE SET replica = EXCLUDED.replica, owner = EXCLUDED.owner,
         remote_host = EXCLUDED.remote_host, probe_address = EXCLUDED.probe_address,
         probe_key = EXCLUDED.probe_key, connected_at = now(), seen_at = now()
        ${restore ? 'WHERE NOT EXISTS (SELECT 1 FROM alive WHERE alive.replica = agent_sessions.replica)' : ''}`,
      [
        rows.map((r) => r.session.workerId),
        this.replica,
        rows.map((r) => r.session.owner),
        rows.map((r) => r.session.remoteHost),
        rows.map((r) => r.session.probeAddress),
        rows.map((r) => r.sealed),
      ],
    );
    // Its own rows' keys are known here (the claims): only other replicas' rows are decrypted.
    if (!restore)
      for (const { session } of rows) this.live.set(session.workerId, { ...session, replica: this.replica });
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
      `WITH ${aliveReplicas('$2')}
       SELECT worker_id, replica FROM agent_sessions JOIN alive USING (replica)
        WHERE worker_id = ANY($1::uuid[])`,
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

  /**
   * Renews this replica's liveness row, reads the other replicas' live rows, and checks its own rows
   * against its streams: where they differ, closes streams claimed elsewhere, removes rows without
   * a stream and restores streams without a row.
   */
  async refresh(): Promise<void> {
    await this.dataSource.query(
      prepared(
        `INSERT INTO agent_replicas (replica) VALUES ($1)
         ON CONFLICT (replica) DO UPDATE SET seen_at = clock_timestamp()`,
      ),
      [this.replica],
    );
    if (Date.now() - this.forgotAt > 60_000) {
      this.forgotAt = Date.now();
      await this.dataSource.query(
        `DELETE FROM agent_replicas WHERE seen_at < clock_timestamp() - $1 * interval '1 millisecond'`,
        [FORGET_REPLICA_MS],
      );
    }
    // This replica's rows are usually exactly its streams, which their count and sums tell without
    // reading them: at 10,000 agents, reading every row and rebuilding the directory each second
    // was most of this method's cost (docs/benchmarks.md). The other replicas' rows come with the
    // sums, from the same snapshot; only when the sums differ is every row read, as one.
    const { fingerprint, others } = await this.othersAndOwnFingerprint();
    if (this.ownRowsMatch(fingerprint)) {
      this.merge(others);
      this.forgetClaims();
      return;
    }
    const local = this.sessions.connectedIds();
    const rows = await this.dataSource.query<SessionRow[]>(
      `WITH ${aliveReplicas('$1')}
       SELECT worker_id, replica, owner, remote_host, probe_address, probe_key
         FROM agent_sessions JOIN alive USING (replica)`,
      [SESSION_TTL_MS],
    );
    const ownRows = rows.filter((row) => row.replica === this.replica);
    const held = new Set(local);
    const own = new Set(ownRows.map((row) => row.worker_id));
    // A row of this replica whose stream is gone (its release failed: the database out of reach,
    // or too busy for the pool's timeout when a fleet left at once) would be renewed here, and its
    // agent seen as connected through every replica, for as long as this replica runs: it goes.
    // Not a row claimed in the last SESSION_TTL_MS: its hello may still be on its way to the stream.
    const stale = [...own].filter((id) => !held.has(id));
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
    this.rebuild(
      rows.filter((row) => row.replica !== this.replica),
      ownRows,
      removed,
    );
    this.forgetClaims();
    const rowless: string[] = [];
    for (const workerId of local) {
      if (own.has(workerId)) continue;
      const holder = this.live.get(workerId)?.replica;
      // Claimed by another replica since: the agent is there now and this stream is stale.
      if (holder !== undefined && holder !== this.replica && this.sessions.isConnected(workerId)) {
        this.logger.log({ worker_id: workerId, replica: holder }, 'agent connected to another replica');
        this.sessions.handOver(workerId, 'connected to another replica');
      } else if (holder === undefined) rowless.push(workerId);
    }
    if (rowless.length > 0) await this.settleRowless(rowless);
  }

  /**
   * The other replicas' live rows, and this replica's summed up as `AgentSessions.fingerprint` sums
   * its streams, in one statement (one snapshot: a row moving between replicas meanwhile is seen
   * once). The sums come on every row, and on one row with no session when there are no others.
   */
  private async othersAndOwnFingerprint(): Promise<{ fingerprint: IdsFingerprint; others: SessionRow[] }> {
    const rows = await this.dataSource.query<
      (Omit<SessionRow, 'worker_id'> & { worker_id: string | null; n: number; head: string; tail: string })[]
    >(
      prepared(
        `WITH ${aliveReplicas('$2')},
         live AS (
           SELECT worker_id, replica, owner, remote_host, probe_address, probe_key
             FROM agent_sessions JOIN alive USING (replica)),
         mine AS (
           SELECT count(*)::int AS n,
                  coalesce(sum(('x' || left(worker_id::text, 8))::bit(32)::int), 0)::text AS head,
                  coalesce(sum(('x' || right(worker_id::text, 8))::bit(32)::int), 0)::text AS tail
             FROM live WHERE replica = $1)
         SELECT mine.n, mine.head, mine.tail, o.worker_id, o.replica, o.owner, o.remote_host,
                o.probe_address, o.probe_key
           FROM mine LEFT JOIN live o ON o.replica <> $1`,
      ),
      [this.replica, SESSION_TTL_MS],
    );
    const [first] = rows;
    return {
      fingerprint: { count: first.n, head: Number(first.head), tail: Number(first.tail) },
      others: rows.filter((row): row is typeof row & SessionRow => row.worker_id !== null),
    };
  }

  /**
   * Whether this replica's rows are its streams, and its entries here too: the same count and sums
   * (ids are random UUIDs: sets that differ but agree on all three are not a case to plan for).
   */
  private ownRowsMatch(rows: IdsFingerprint): boolean {
    const same = (a: IdsFingerprint, b: IdsFingerprint) =>
      a.count === b.count && a.head === b.head && a.tail === b.tail;
    const streams = this.sessions.fingerprint();
    return same(rows, streams) && same(this.live.own, streams);
  }

  /** The other replicas' rows as read, in place: this replica's entries stay as they are. */
  private merge(others: readonly SessionRow[]): void {
    const sealedNow = new Set<string>();
    const seen = new Set<string>();
    for (const row of others) {
      seen.add(row.worker_id);
      const entry = this.fromRow(row, sealedNow);
      if (this.live.get(row.worker_id) !== entry) this.live.set(row.worker_id, entry);
    }
    for (const id of this.live.others()) if (!seen.has(id)) this.live.delete(id);
    this.forgetKeys(sealedNow);
  }

  /**
   * The directory from what was read: the other replicas' rows as read, and this replica's rows
   * (less `removed`) from what it claimed; a row of its own it knows nothing of is taken as read.
   */
  private rebuild(
    others: readonly SessionRow[],
    ownRows: readonly SessionRow[],
    removed: ReadonlySet<string>,
  ): void {
    const sealedNow = new Set<string>();
    const next = new Entries(this.replica);
    for (const row of others) next.set(row.worker_id, this.fromRow(row, sealedNow));
    for (const row of ownRows) {
      const id = row.worker_id;
      if (removed.has(id)) continue;
      const known = this.live.get(id);
      const claim = this.claimed.get(id);
      if (known !== undefined && known.replica === this.replica) next.set(id, known);
      else if (claim !== undefined) next.set(id, { ...claim.session, replica: this.replica });
      else next.set(id, this.fromRow(row, sealedNow));
    }
    this.live = next;
    this.forgetKeys(sealedNow);
  }

  /** A row as a directory entry: the entry there now when the row is what it says. */
  private fromRow(row: SessionRow, sealedNow: Set<string>): SessionInfo {
    sealedNow.add(row.probe_key);
    const probeKey = this.probeKey(row);
    const known = this.live.get(row.worker_id);
    if (
      known !== undefined &&
      known.replica === row.replica &&
      known.owner === row.owner &&
      known.remoteHost === row.remote_host &&
      known.probeAddress === row.probe_address &&
      known.probeKey === probeKey
    )
      return known;
    return {
      workerId: row.worker_id,
      owner: row.owner,
      replica: row.replica,
      remoteHost: row.remote_host,
      probeAddress: row.probe_address,
      probeKey,
    };
  }

  /** Decrypted keys of rows no longer read go. */
  private forgetKeys(sealedNow: ReadonlySet<string>): void {
    for (const sealed of this.keys.keys()) if (!sealedNow.has(sealed)) this.keys.delete(sealed);
  }

  /** Claims of workers without a stream here, older than SESSION_TTL_MS. */
  private forgetClaims(): void {
    // Every claim has its stream here, the usual case: nothing to look at.
    if (this.claimed.size <= this.sessions.count) return;
    const now = Date.now();
    for (const [workerId, { at }] of this.claimed)
      if (!this.sessions.isConnected(workerId) && now - at > SESSION_TTL_MS) this.claimed.delete(workerId);
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
