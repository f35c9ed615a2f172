import { Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { every } from '../common/periodic.js';
import { randomBytes, randomUUID } from 'node:crypto';
import { probeAnswer, type ConnectivityReportMsg } from '../../contracts/agent-protocol/index.js';
import { AgentSessions } from '../agent-gateway/agent-sessions.js';
import type { Caller } from '../common/request-context.js';
import { AppConfig } from '../config/config.js';
import type { ConnectivityCheck, ConnectivityView } from '../../contracts/api/workers.js';
import { ConnectivityRepository, type LinkRow } from './connectivity.repository.js';

const PROBE_TIMEOUT_MS = 2000;
/** A probe round's id is accepted back for this long. */
const PROBE_ACCEPT_MS = 60_000;

interface Peer {
  owner: string;
  /** Where peers probe it: the address the service knows for it, never one the agent named. */
  probeAddress: string;
  /** This connection's key: only the agent holding it can answer a challenge made with it. */
  probeKey: string;
}

/**
 * The connectivity matrix: connected agents of one owner probe each other's probe listener, on a
 * schedule (CONNECTIVITY_CHECK_INTERVAL) and on request; the latest result per pair is kept. A
 * result is only reachable or not: reachable means the target agent itself answered its challenge.
 */
@Injectable()
export class ConnectivityService implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('workers');
  private readonly peers = new Map<string, Peer>();
  /** probe id → the targets each worker was asked about, to accept only answers to real questions. */
  private readonly rounds = new Map<string, { at: number; asked: Map<string, Set<string>> }>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly repository: ConnectivityRepository,
    private readonly sessions: AgentSessions,
    private readonly config: AppConfig,
  ) {}

  onModuleInit(): void {
    this.timer = every(this.logger, 'connectivity-probe', this.config.connectivityCheckIntervalMs, () =>
      this.probe(),
    );
  }

  onModuleDestroy(): void {
    clearInterval(this.timer);
  }

  /** Makes a connected agent a probe target; returns its probe key ('' when it has no listener). */
  peerUp(workerId: string, owner: string, probeAddress: string): string {
    if (!probeAddress) {
      this.peers.delete(workerId);
      return '';
    }
    const probeKey = randomBytes(32).toString('base64url');
    this.peers.set(workerId, { owner, probeAddress, probeKey });
    return probeKey;
  }

  peerDown(workerId: string): void {
    this.peers.delete(workerId);
  }

  /** Asks every connected agent (of `owner`, or of every owner) to probe its owner's other agents. */
  probe(owner?: string): ConnectivityCheck {
    const probeId = randomUUID();
    const asked = new Map<string, Set<string>>();
    for (const [id, peer] of this.peers) {
      if (owner !== undefined && peer.owner !== owner) continue;
      const targets = [...this.peers].filter(([other, p]) => other !== id && p.owner === peer.owner);
      if (targets.length === 0) continue;
      const sent = this.sessions.send(id, {
        probe: {
          probe_id: probeId,
          timeout_ms: PROBE_TIMEOUT_MS,
          targets: targets.map(([other, p]) => {
            const challenge = randomBytes(16).toString('base64url');
            return {
              worker_id: other,
              address: p.probeAddress,
              challenge,
              answer: probeAnswer(p.probeKey, challenge),
            };
          }),
        },
      });
      if (sent) asked.set(id, new Set(targets.map(([other]) => other)));
    }
    this.rounds.set(probeId, { at: Date.now(), asked });
    for (const [pid, round] of this.rounds)
      if (Date.now() - round.at > PROBE_ACCEPT_MS) this.rounds.delete(pid);
    return { probe_id: probeId, workers: asked.size };
  }

  /** `POST .../workers/connectivity/check`: a round for the caller's owner. */
  check(caller: Caller): ConnectivityCheck {
    return this.probe(caller.owner);
  }

  /** An agent's answer; only results for targets it was asked about are kept. */
  async record(workerId: string, report: ConnectivityReportMsg): Promise<void> {
    const round = this.rounds.get(report.probe_id);
    const asked = round?.asked.get(workerId);
    if (!round || !asked) return;
    // One answer per question: a repeated report is dropped.
    round.asked.delete(workerId);
    // The round's start, not the report's arrival: how long a round took would tell a refused port
    // (at once) from a filtered one (at the timeout).
    const checkedAt = new Date(round.at);
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
    return {
      workers,
      links: links.map((l) => ({
        from: l.fromId,
        to: l.toId,
        reachable: l.reachable,
        rtt_ms: l.rttMs,
        checked_at: l.checkedAt.toISOString(),
      })),
    };
  }
}
