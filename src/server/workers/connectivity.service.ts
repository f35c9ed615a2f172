import { Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { every } from '../common/periodic.js';
import { randomBytes, randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import {
  probeAnswer,
  type ConnectivityReportMsg,
  type ServerMessage,
} from '../../contracts/agent-protocol/index.js';
import { CommandRelay } from '../agent-gateway/command-relay.js';
import { SessionDirectory } from '../agent-gateway/session-directory.js';
import { isUuid } from '../common/ids.js';
import { Leases } from '../common/leases.js';
import type { Caller } from '../common/request-context.js';
import { assertOperator } from '../auth/operator.js';
import { AppConfig } from '../config/config.js';
import type { ConnectivityCheck, ConnectivityView } from '../../contracts/api/workers.js';
import { ConnectivityRepository, type LinkRow } from './connectivity.repository.js';

const PROBE_TIMEOUT_MS = 2000;
/** A probe round's id is accepted back for this long. */
const PROBE_ACCEPT_MS = 60_000;
/** The scheduled rounds run on one replica at a time, the holder of this lease. */
export const CONNECTIVITY_LEASE = 'connectivity';

/**
 * The connectivity matrix: connected agents of one owner probe each other's probe listener, on a
 * schedule (CONNECTIVITY_CHECK_INTERVAL, on the replica holding the `connectivity` lease) and on
 * request (on the replica that took it). The peers are every replica's agents (SessionDirectory);
 * the questions go through the CommandRelay and are kept in `probe_rounds`, since the answer comes
 * back through whichever replica holds the answering agent's stream. The latest result per pair is
 * kept. A result is only reachable or not: reachable means the target agent itself answered its
 * challenge.
 */
@Injectable()
export class ConnectivityService implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('workers');
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly repository: ConnectivityRepository,
    private readonly directory: SessionDirectory,
    private readonly relay: CommandRelay,
    private readonly leases: Leases,
    private readonly dataSource: DataSource,
    private readonly config: AppConfig,
  ) {}

  onModuleInit(): void {
    const interval = this.config.connectivityCheckIntervalMs;
    this.timer = every(this.logger, 'connectivity-probe', interval, async () => {
      // The lease outlives one interval, so its holder keeps it from round to round.
      if (await this.leases.acquire(CONNECTIVITY_LEASE, interval + 10_000)) await this.probe();
    });
  }

  async onModuleDestroy(): Promise<void> {
    clearInterval(this.timer);
    // Given up at once: another replica need not wait out the TTL.
    await this.leases.release(CONNECTIVITY_LEASE).catch(() => undefined);
  }

  /** A new probe key for a connecting agent ('' when it has no probe listener to challenge). */
  newProbeKey(probeAddress: string): string {
    return probeAddress ? randomBytes(32).toString('base64url') : '';
  }

  /** Asks every connected agent (of `owner`, or of every owner) to probe its owner's other agents. */
  async probe(owner?: string): Promise<ConnectivityCheck> {
    const probeId = randomUUID();
    const startedAt = new Date();
    const peers = this.directory.all(owner).filter((p) => p.probeAddress !== '' && p.probeKey !== '');
    const questions: { workerId: string; message: ServerMessage; targets: string[] }[] = [];
    for (const peer of peers) {
      const targets = peers.filter((p) => p.workerId !== peer.workerId && p.owner === peer.owner);
      if (targets.length === 0) continue;
      questions.push({
        workerId: peer.workerId,
        targets: targets.map((t) => t.workerId),
        message: {
          probe: {
            probe_id: probeId,
            timeout_ms: PROBE_TIMEOUT_MS,
            targets: targets.map((t) => {
              const challenge = randomBytes(16).toString('base64url');
              return {
                worker_id: t.workerId,
                address: t.probeAddress,
                challenge,
                answer: probeAnswer(t.probeKey, challenge),
              };
            }),
          },
        },
      });
    }
    // The round is stored before any question leaves: an answer may come back at once, elsewhere.
    await this.dataSource.query(
      `DELETE FROM probe_rounds WHERE started_at < now() - $1 * interval '1 millisecond'`,
      [PROBE_ACCEPT_MS],
    );
    await this.dataSource.query(
      `INSERT INTO probe_rounds (probe_id, started_at, asked) VALUES ($1, $2, $3)`,
      [probeId, startedAt, JSON.stringify(Object.fromEntries(questions.map((q) => [q.workerId, q.targets])))],
    );
    let asked = 0;
    for (const q of questions) if (await this.relay.deliver(q.workerId, q.message)) asked++;
    return { probe_id: probeId, workers: asked };
  }

  /** `POST .../workers/connectivity/check`: a round for the caller's owner. */
  check(caller: Caller): Promise<ConnectivityCheck> {
    return this.probe(caller.owner);
  }

  /** An agent's answer; only results for targets it was asked about are kept. */
  async record(workerId: string, report: ConnectivityReportMsg): Promise<void> {
    if (!isUuid(report.probe_id)) return;
    // One answer per question: the worker's entry is taken out of the round as it is read, so a
    // repeated report (to this replica or another) finds nothing.
    // TypeORM answers an UPDATE ... RETURNING as [rows, count].
    const [[round]] = await this.dataSource.query<[{ started_at: Date; targets: string[] }[], number]>(
      `WITH old AS (
         SELECT probe_id, started_at, asked -> $2::text AS targets FROM probe_rounds
          WHERE probe_id = $1 AND asked ? $2::text AND started_at > now() - $3 * interval '1 millisecond'
          FOR UPDATE)
       UPDATE probe_rounds p SET asked = p.asked - $2::text FROM old WHERE p.probe_id = old.probe_id
       RETURNING old.started_at, old.targets`,
      [report.probe_id, workerId, PROBE_ACCEPT_MS],
    );
    if (!round) return;
    const asked = new Set(round.targets);
    // The round's start, not the report's arrival: how long a round took would tell a refused port
    // (at once) from a filtered one (at the timeout).
    const checkedAt = new Date(round.started_at);
    const rows: LinkRow[] = report.results
      .filter((r) => asked.has(r.worker_id))
      .map((r) => ({
        fromId: workerId,
        toId: r.worker_id,
        reachable: r.reachable === true,
        rttMs: r.reachable && Number.isFinite(r.rtt_ms) ? Math.round(r.rtt_ms * 1000) / 1000 : null,
        checkedAt,
      }));
    await this.repository.upsert(rows);
    const unreachable = rows.filter((r) => !r.reachable);
    if (unreachable.length > 0) {
      this.logger.warn(
        { worker_id: workerId, unreachable: unreachable.map((r) => r.toId) },
        'peers unreachable',
      );
    }
  }

  async matrix(caller: Caller): Promise<ConnectivityView> {
    const { workers, links } = await this.repository.matrix(caller.owner);
    return { workers, links: links.map(linkView) };
  }

  /** The matrix rows of these workers, whoever owns them: for the operator's debug bundle. */
  async linksFrom(caller: Caller, workerIds: string[]): Promise<ConnectivityView['links']> {
    assertOperator(caller);
    return (await this.repository.linksFrom(workerIds)).map(linkView);
  }
}

const linkView = (l: LinkRow): ConnectivityView['links'][number] => ({
  from: l.fromId,
  to: l.toId,
  reachable: l.reachable,
  rtt_ms: l.rttMs,
  checked_at: l.checkedAt.toISOString(),
});
