import { NodeMetricsRecorder } from '../metric-store/node-metrics.js';
import { isUuid } from '../common/ids.js';
import { every } from '../common/periodic.js';
import { Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { InjectMetric } from '@willsoto/nestjs-prometheus';
import type { Counter, Gauge } from 'prom-client';
import type {
  ConnectivityReportMsg,
  HeartbeatMsg,
  HelloMsg,
  StateReportMsg,
} from '../../contracts/agent-protocol/index.js';
import { IDENTITY_REVOKED } from '../../contracts/agent-protocol/index.js';
import {
  AgentSessions,
  type AgentConnection,
  type AgentEventsHandler,
} from '../agent-gateway/agent-sessions.js';
import { CertificatesService } from '../agent-gateway/certificates.service.js';
import { GatewayServer } from '../agent-gateway/gateway.server.js';
import { AGENT_MAX_BACKOFF_MS, AGENT_WELCOME_TIMEOUT_MS } from '../../contracts/agent-protocol/reconnect.js';
import { SESSION_TTL_MS, SessionDirectory } from '../agent-gateway/session-directory.js';
import { Leases } from '../common/leases.js';
import { StartupState } from '../common/startup-state.js';
import { AuditService } from '../audit/audit.service.js';
import { AppError, NotFoundError } from '../common/app-error.js';
import { type Cursor, type Page, cursorPage, byCreation } from '../common/pagination.js';
import { assertOperator } from '../auth/operator.js';
import type { Caller } from '../common/request-context.js';
import { AppConfig } from '../config/config.js';
import type { WorkerView } from '../../contracts/api/workers.js';
import { OrchestratorHealthService } from '../health/orchestrator-health.service.js';
import { METRIC } from '../metrics/metric-names.js';
import { ConnectivityService } from './connectivity.service.js';
import type { ListWorkersDto } from './dto/list-workers.dto.js';
import { WorkerEntity } from './entities/worker.entity.js';
import { announcedProbePort, probeAddress, probeHost } from './probe-address.js';
import {
  nextState,
  type NodeMetrics,
  type Thresholds,
  type WorkerEvent,
  type WorkerState,
} from './worker-state.js';
import { notPending } from './workers.errors.js';
import { WorkersRepository } from './workers.repository.js';

/** Missing this many heartbeat intervals makes a worker unreachable. */
const MISSED_INTERVALS = 3;
/** The sweep lease outlives a few sweeps; a dead holder's is taken over within it. */
const SWEEP_LEASE_TTL_MS = 10_000;
/** The lease under which one replica at a time marks silent workers unreachable. */
export const WORKER_SWEEP_LEASE = 'worker-sweep';
/**
 * The marker (a row of `leases`) every replica with agents waiting for admission renews: the sweep
 * holder reads from it when a backlog was last seen anywhere.
 */
export const AGENT_BACKLOG_MARK = 'agent-backlog';
/** A backlog marker runs this long past its last renewal... */
const BACKLOG_MARK_TTL_MS = 3_000;
/** ...which is at most this often per replica, while its backlog lasts. */
const BACKLOG_MARK_EVERY_MS = 1_000;
/**
 * An agent that gave up while waiting for admission may take this long to come back: a stream it
 * dialled just as the queue emptied is given up at its welcome timeout, then it waits up to its
 * largest reconnect delay. The sweep waits at least this long after the last backlog.
 */
const AGENT_RETURN_MS = AGENT_WELCOME_TIMEOUT_MS + AGENT_MAX_BACKOFF_MS;

/**
 * Resolves after the event loop has polled its sockets at least once from now: two immediates,
 * since one queued from a callback of the poll phase runs in the same turn's check phase, before
 * any new poll, and one queued from a check-phase callback waits for the next turn. Silence is
 * judged after it: a replica that stalled (a long callback, a pause, a starved CPU) runs its due
 * timers and the rest of the stalled turn before it reads sockets again, and judging then would
 * blame agents whose heartbeats are only waiting to be read.
 */
const readSocketsFirst = async (): Promise<void> => {
  await new Promise<void>((resolve) => setImmediate(resolve));
  await new Promise<void>((resolve) => setImmediate(resolve));
};

/** Services of one state report recorded as series (the reports' own cap). */
const MAX_RECORDED_SERVICES = 2000;

/** A connected or recently connected worker as this replica sees it; the hot path's state. */
interface LiveWorker {
  owner: string;
  name: string;
  status: WorkerState;
  metrics: NodeMetrics | null;
  lastHeartbeat: Date | null;
  /** When its stream was accepted: silence counts from here until a first heartbeat. */
  connectedAt: Date;
  dirty: boolean;
  connected: boolean;
  driver: string;
  labels: Record<string, string>;
  capacity: { cpu: number; memory_bytes: number };
  /** The address its stream came from (the gRPC peer). */
  connectedFrom: string | undefined;
}

/** A connected worker as placement sees it. */
export interface LiveWorkerView {
  id: string;
  status: WorkerState;
  connected: boolean;
  driver: string;
  labels: Record<string, string>;
  capacity: { cpu: number; memory_bytes: number };
}

/**
 * Workers: enrollment, approval, listing, deletion; and the agents' heartbeats. Heartbeats change
 * only memory; a timer flushes the changed workers in one statement (so every replica reads them
 * within a second) and, on the replica holding the `worker-sweep` lease, runs the unreachable sweep
 * as one statement. Every status change goes through `transition` (logged with worker_id, counted).
 */
@Injectable()
export class WorkersService implements AgentEventsHandler, OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('workers');
  private readonly live = new Map<string, LiveWorker>();
  /**
   * The workers marked dirty since the last flush, and those whose stream ended: what a flush looks
   * at, rather than every live worker (at 10,000 agents a pass over all of them, three a second,
   * cost more than the heartbeats they recorded).
   */
  private readonly dirtyIds = new Set<string>();
  private readonly goneIds = new Set<string>();
  /** When (Date.now) `silence` last looked, and how often it looks. */
  private silenceLooked = 0;
  private silenceEveryMs = 0;
  private tickMs = 1000;
  readonly thresholds: Thresholds;
  private timer: NodeJS.Timeout | undefined;
  private lastSweep = 0;
  /** Since when (performance.now) this replica has held the sweep lease without a break. */
  private sweepingSince: number | undefined;
  private ticking = false;
  /** When (performance.now) this replica last renewed the backlog marker. */
  private backlogMarked: number | undefined;
  /** Since when (performance.now) a backlog has held this holder's sweep off without a break. */
  private heldBackSince: number | undefined;
  /** Whether the hold's limit (WORKER_BACKLOG_HOLD_MAX) has been logged for this hold. */
  private holdLimitLogged = false;
  private counts: Record<string, number> = {};

  constructor(
    private readonly repository: WorkersRepository,
    private readonly certificates: CertificatesService,
    private readonly sessions: AgentSessions,
    private readonly gateway: GatewayServer,
    private readonly directory: SessionDirectory,
    private readonly leases: Leases,
    private readonly startup: StartupState,
    private readonly audit: AuditService,
    private readonly health: OrchestratorHealthService,
    private readonly links: ConnectivityService,
    private readonly config: AppConfig,
    private readonly nodeMetrics: NodeMetricsRecorder,
    @InjectMetric(METRIC.workersConnected) connectedGauge: Gauge<string>,
    @InjectMetric(METRIC.workersHealthy) private readonly healthyGauge: Gauge<string>,
    @InjectMetric(METRIC.workerTransitions) private readonly transitions: Counter<string>,
  ) {
    this.thresholds = {
      degradedPercent: config.workerDegradedPercent,
      unhealthyPercent: config.workerUnhealthyPercent,
    };
    // Read when /metrics is scraped (prom-client's `collect`): the streams held at that moment. Set
    // from the hello, the disconnect and the tick before, a tick could write a count taken between
    // a hello and its stream's registration, and the gauge read 0 for a connected agent until the
    // next tick.
    (connectedGauge as Gauge<string> & { collect?: () => void }).collect = () =>
      connectedGauge.set(sessions.count);
  }

  onModuleInit(): void {
    this.sessions.setHandler(this);
    this.sessions.addStateHandler({
      state: (workerId, report) => this.recordServices(workerId, report),
      disconnected: () => undefined,
    });
    this.health.registerCheck('workers', () => this.workersCheck());
    const tick = Math.max(50, Math.min(1000, Math.floor(this.config.heartbeatIntervalMs / 2)));
    // Silence is judged over three intervals: a look every half interval is soon enough.
    this.tickMs = tick;
    this.silenceEveryMs = Math.max(tick, Math.floor(this.config.heartbeatIntervalMs / 2));
    this.timer = every(this.logger, 'worker-states', tick, () => this.tick());
  }

  async onModuleDestroy(): Promise<void> {
    clearInterval(this.timer);
    await this.leases.release(WORKER_SWEEP_LEASE).catch(() => undefined);
    await this.flush().catch((err: unknown) => this.logger.warn({ err }, 'final heartbeat flush failed'));
  }

  // ---- operator API (owner-scoped) ----

  list(caller: Caller, query: ListWorkersDto): Promise<Page<WorkerView>> {
    const owner = caller.owner;
    return cursorPage(
      query,
      (take, after) => this.repository.listInOwner(owner, take, query.status, after),
      byCreation,
      (w) => this.view(w),
    );
  }

  /**
   * Every owner's workers in creation order, a page of `limit` after `after`, each with its owner:
   * for the operator's debug bundle.
   */
  async everyOwner(
    caller: Caller,
    limit: number,
    after?: Cursor,
  ): Promise<(WorkerView & { owner: string })[]> {
    assertOperator(caller);
    const workers = await this.repository.listEveryOwner(limit, after);
    return workers.map((w) => ({ ...this.view(w), owner: w.owner }));
  }

  async get(caller: Caller, id: string): Promise<WorkerView> {
    return this.view(await this.findOwned(caller, id));
  }

  async approve(caller: Caller, id: string): Promise<WorkerView> {
    const worker = await this.findOwned(caller, id);
    if (worker.status !== 'pending') throw notPending(id);
    const status = nextState('pending', { type: 'approved' }, this.thresholds);
    const at = new Date();
    // The conditional update decides which of two racing approvals wins; only the winner issues.
    if (!(await this.repository.approve(worker.owner, worker.id, status, at))) throw notPending(id);
    await this.certificates.issue(worker.id, worker.csr);
    this.transition(worker.id, 'pending', status, 'approved');
    await this.audit.record({ action: 'worker.approved', owner: worker.owner, target: worker.id });
    return this.view({ ...worker, status, approvedAt: at });
  }

  /** Removes the worker: certificates revoked and its live stream closed at once. */
  async delete(caller: Caller, id: string): Promise<void> {
    const worker = await this.findOwned(caller, id);
    const revoked = await this.certificates.revokeForWorker(worker.id);
    await this.repository.delete(worker.id);
    this.live.delete(worker.id);
    // Its session row went with the worker; a stream on another replica ends at that replica's
    // next certificate check or session refresh.
    this.sessions.close(worker.id, IDENTITY_REVOKED);
    await this.audit.record({
      action: 'worker.deleted',
      owner: worker.owner,
      target: worker.id,
      details: { revoked },
    });
    this.logger.log({ worker_id: worker.id, revoked_certificates: revoked.length }, 'worker deleted');
  }

  // ---- the agent stream (AgentEventsHandler) ----

  async hello(
    workerId: string,
    hello: HelloMsg,
    connection: AgentConnection,
  ): Promise<{ status: string; probeKey: string }> {
    const worker = await this.repository.findForHello(workerId);
    if (!worker) throw new AppError(401, 'unauthorized', 'Unauthorized', IDENTITY_REVOKED);
    if (worker.status === 'pending')
      throw new AppError(403, 'forbidden', 'Forbidden', 'the worker is not approved');
    // Peers are sent to the address we know for this agent, at the port of its probe listener.
    if (worker.address && !probeHost(worker.address))
      this.logger.warn(
        { worker_id: workerId },
        'enrolled address is not a host; probing where it connects from',
      );
    const peerAddress = probeAddress(worker.address, connection.remoteHost, announcedProbePort(hello));
    const probeKey = this.links.newProbeKey(peerAddress);
    await this.directory.claim({
      workerId,
      owner: worker.owner,
      remoteHost: connection.remoteHost ?? null,
      probeAddress: peerAddress,
      probeKey,
    });
    // Live here, and judged for silence, only from now: the welcome goes out next, and the agent
    // heartbeats on it. Set before the claim, a claim slow to commit (a busy database) counted
    // against the agent, and one that failed left a connected entry no stream would ever feed.
    this.live.set(workerId, {
      owner: worker.owner,
      name: worker.name,
      status: worker.status,
      metrics: worker.metrics,
      lastHeartbeat: worker.lastHeartbeat,
      connectedAt: new Date(),
      dirty: false,
      connected: true,
      driver: hello.driver === 'docker' ? 'docker' : 'process',
      labels: worker.labels,
      capacity: {
        cpu: Number.isFinite(hello.cpu_cores) ? Math.max(0, hello.cpu_cores) : 0,
        memory_bytes: Number.isFinite(hello.memory_bytes) ? Math.max(0, hello.memory_bytes) : 0,
      },
      connectedFrom: connection.remoteHost,
    });
    this.logger.log({ worker_id: workerId, version: hello.version, driver: hello.driver }, 'agent connected');
    return { status: worker.status, probeKey };
  }

  heartbeat(workerId: string, heartbeat: HeartbeatMsg): void {
    const worker = this.live.get(workerId);
    if (!worker) return;
    const metrics: NodeMetrics = {
      cpu_percent: round(heartbeat.metrics?.cpu_percent ?? 0),
      memory_percent: round(heartbeat.metrics?.memory_percent ?? 0),
      disk_percent: round(heartbeat.metrics?.disk_percent ?? 0),
      containers_running: Math.max(0, Math.floor(heartbeat.metrics?.containers_running ?? 0)),
    };
    const event: WorkerEvent = {
      type: 'heartbeat',
      report: {
        metrics,
        checks: Object.fromEntries(heartbeat.checks.map((c) => [c.name, c.ok])),
        criticalChecks: heartbeat.checks.filter((c) => c.critical).map((c) => c.name),
      },
    };
    const status = nextState(worker.status, event, this.thresholds);
    if (status !== worker.status) this.transition(workerId, worker.status, status, 'heartbeat');
    worker.status = status;
    worker.metrics = metrics;
    worker.lastHeartbeat = new Date();
    this.markDirty(workerId, worker);
    this.nodeMetrics.record(worker.owner, workerId, worker.name, metrics, worker.lastHeartbeat.getTime());
  }

  /**
   * A state report's services become series of the worker's owner (`stack_service_*`,
   * docs/metrics.md), as heartbeats' node figures do: what the stack dashboards read.
   */
  private recordServices(workerId: string, report: StateReportMsg): void {
    const worker = this.live.get(workerId);
    if (!worker) return;
    const figures = (report.services ?? [])
      .filter((s) => s.desired && s.stack_id)
      .slice(0, MAX_RECORDED_SERVICES)
      .map((s) => ({
        stackId: s.stack_id,
        service: s.name,
        up: s.running,
        restarts: s.restarts ?? 0,
        healthLatency: s.health?.checked_at ? (s.health.latency_ms ?? 0) / 1000 : null,
      }));
    this.nodeMetrics.recordServices(worker.owner, workerId, figures);
  }

  connectivity(workerId: string, report: ConnectivityReportMsg): void {
    this.links
      .record(workerId, report)
      .catch((err: unknown) =>
        this.logger.warn({ err, worker_id: workerId }, 'connectivity report not stored'),
      );
  }

  disconnected(workerId: string): void {
    const worker = this.live.get(workerId);
    if (worker) {
      worker.connected = false;
      this.goneIds.add(workerId);
    }
    void this.directory
      .release(workerId)
      .catch((err: unknown) => this.logger.warn({ err, worker_id: workerId }, 'agent session not released'));
    this.logger.log({ worker_id: workerId }, 'agent disconnected');
  }

  /** Whether `liveWorkers(owner)` would list worker `id`. */
  isLiveFor(owner: string, id: string): boolean {
    const w = this.live.get(id);
    return w !== undefined && w.owner === owner && this.isLive(id, w);
  }

  /** Connected, with its stream on this replica. */
  private isLive(id: string, w: LiveWorker): boolean {
    return w.connected && this.sessions.isConnected(id);
  }

  /** Every worker `liveWorkers` would list, of every owner: ids and owners side by side. */
  liveWorkerOwners(): { ids: string[]; owners: string[] } {
    const ids: string[] = [];
    const owners: string[] = [];
    for (const [id, w] of this.live) {
      if (!this.isLive(id, w)) continue;
      ids.push(id);
      owners.push(w.owner);
    }
    return { ids, owners };
  }

  /** The owner's workers connected to this replica, for placement. */
  liveWorkers(owner: string): LiveWorkerView[] {
    const out: LiveWorkerView[] = [];
    for (const [id, w] of this.live) {
      if (w.owner !== owner || !this.isLive(id, w)) continue;
      out.push({
        id,
        status: w.status,
        connected: true,
        driver: w.driver,
        labels: w.labels,
        capacity: w.capacity,
      });
    }
    return out;
  }

  /**
   * Where the services a worker runs are reached (the published ones, by the ingress): the address
   * recorded at enrollment when it is a host, else where its stream comes from (known to the replica
   * that holds the stream, which is where its jobs end). Never a host the agent names itself.
   */
  async serviceHost(workerId: string): Promise<string | undefined> {
    const worker = await this.repository.findById(workerId);
    if (!worker) return undefined;
    return (
      probeHost(worker.address) ??
      this.live.get(workerId)?.connectedFrom ??
      this.directory.get(workerId)?.remoteHost ??
      undefined
    );
  }

  // ---- timers ----

  private async tick(): Promise<void> {
    if (this.ticking) return;
    this.ticking = true;
    try {
      await this.markBacklog();
      await this.flush();
      await readSocketsFirst();
      this.silence();
      const due = Date.now() - this.lastSweep >= this.config.heartbeatIntervalMs;
      const held = await this.sweepLease(due);
      if (due) {
        this.lastSweep = Date.now();
        await this.sweep(held);
      }
    } catch (err) {
      this.logger.warn({ err }, 'worker state flush or sweep failed; retrying');
    } finally {
      this.ticking = false;
    }
  }

  private markDirty(id: string, worker: LiveWorker): void {
    worker.dirty = true;
    this.dirtyIds.add(id);
  }

  /** Writes every changed worker in one statement, then forgets disconnected ones. */
  private async flush(): Promise<void> {
    const rows = [];
    for (const id of this.dirtyIds) {
      const w = this.live.get(id);
      // Without a heartbeat yet there is nothing to write: it stays dirty until there is.
      if (w?.dirty && !(w.metrics && w.lastHeartbeat)) continue;
      this.dirtyIds.delete(id);
      if (!w?.dirty || !w.metrics || !w.lastHeartbeat) continue;
      rows.push({ id, status: w.status, metrics: w.metrics, lastHeartbeat: w.lastHeartbeat });
      w.dirty = false;
    }
    try {
      await this.repository.flushHeartbeats(rows);
    } catch (err) {
      for (const row of rows) {
        const w = this.live.get(row.id);
        if (w) this.markDirty(row.id, w);
      }
      throw err;
    }
    for (const id of this.goneIds) {
      const w = this.live.get(id);
      if (w !== undefined && !w.connected && w.dirty) continue;
      this.goneIds.delete(id);
      if (w !== undefined && !w.connected) this.live.delete(id);
    }
  }

  private get silenceMs(): number {
    return MISSED_INTERVALS * this.config.heartbeatIntervalMs;
  }

  /** How long after the last admission backlog anywhere the sweep still judges nobody. */
  private get backlogMarginMs(): number {
    return Math.max(this.silenceMs, AGENT_RETURN_MS);
  }

  /**
   * While agents wait for admission here, the shared backlog marker is renewed (a query a second
   * at most, and none without a backlog): the sweep holder, whichever replica it is, holds off.
   */
  private async markBacklog(): Promise<void> {
    if (!this.gateway.backlogged) return;
    const now = performance.now();
    if (this.backlogMarked !== undefined && now - this.backlogMarked < BACKLOG_MARK_EVERY_MS) return;
    await this.leases.mark(AGENT_BACKLOG_MARK, BACKLOG_MARK_TTL_MS);
    this.backlogMarked = now;
  }

  /**
   * Whether the holder may judge silence now as far as admission goes: not while, or within
   * `backlogMarginMs` after, any replica had agents waiting for admission (its marker's last
   * renewal is its expiry less the TTL), for at most WORKER_BACKLOG_HOLD_MAX of such hold in a row.
   * One query, on the holder, once per sweep.
   */
  private async pastBacklog(): Promise<boolean> {
    const limit = this.config.workerBacklogHoldMaxMs;
    if (limit === 0) return true;
    const expired = await this.leases.expiredFor(AGENT_BACKLOG_MARK);
    const sinceBacklog = expired === undefined ? Infinity : expired + BACKLOG_MARK_TTL_MS;
    const now = performance.now();
    if (sinceBacklog >= this.backlogMarginMs) {
      if (this.heldBackSince !== undefined)
        this.logger.warn(
          { held_ms: Math.round(now - this.heldBackSince) },
          'agents admitted: the unreachable sweep judges silent workers again',
        );
      this.heldBackSince = undefined;
      this.holdLimitLogged = false;
      return true;
    }
    if (this.heldBackSince === undefined) {
      this.heldBackSince = now;
      this.logger.warn(
        { margin_ms: this.backlogMarginMs },
        'agents wait for admission: the unreachable sweep holds off until the backlog has cleared for the margin',
      );
    }
    if (now - this.heldBackSince < limit) return false;
    if (!this.holdLimitLogged) {
      this.holdLimitLogged = true;
      this.logger.warn(
        { held_ms: Math.round(now - this.heldBackSince), limit_ms: limit },
        'agents still wait for admission, past WORKER_BACKLOG_HOLD_MAX: the unreachable sweep judges silent workers again',
      );
    }
    return true;
  }

  /**
   * A worker whose stream this replica holds and that has been silent for too long turns
   * unreachable here (written at the next flush). The lease holder's sweep covers the workers no
   * live replica holds (their replica died, or their stream ended).
   */
  private silence(): void {
    const now = Date.now();
    // Half a tick of slack: ticks come a little early or late, and a look due every tick must not
    // wait for the next one.
    if (now - this.silenceLooked < this.silenceEveryMs - this.tickMs / 2) return;
    this.silenceLooked = now;
    for (const [id, w] of this.live) {
      if (w.status === 'unreachable' || w.status === 'pending') continue;
      const heard = Math.max(w.lastHeartbeat?.getTime() ?? 0, w.connectedAt.getTime());
      if (now - heard < this.silenceMs) continue;
      if (!w.connected) continue;
      this.transition(id, w.status, 'unreachable', 'missed_heartbeats', {
        judged_by: 'stream',
        silent_ms: now - heard,
      });
      w.status = 'unreachable';
      this.markDirty(id, w);
    }
  }

  /**
   * The sweep lease: taken at the sweep's pace, and renewed at every tick by its holder (a query a
   * third of a TTL at most), so holding it stays unbroken however long the heartbeat interval.
   */
  private async sweepLease(due: boolean): Promise<boolean> {
    if (!due && this.sweepingSince === undefined) return false;
    const held = await this.leases.holds(WORKER_SWEEP_LEASE, SWEEP_LEASE_TTL_MS);
    // The grace counts from when agents can reach this replica again: its listeners are up.
    if (!held || !this.startup.status().started) this.sweepingSince = undefined;
    else this.sweepingSince ??= performance.now();
    return held;
  }

  /**
   * On the lease holder, one statement marks silent workers unreachable (a worker heard from
   * meanwhile is restored); on every replica, the status counts behind the health check.
   *
   * Restart grace: the holder judges silence only once it has held the lease, with its listeners
   * up, for the whole timeout, so after a restart or a takeover every worker gets three intervals
   * from then to report, as if its silence counted from max(last heartbeat, takeover). A replica restarting while another
   * holds the lease changes nothing: that one's sweeps go on as before. Nor does it judge while the
   * control plane is behind on admitting agents (pastBacklog): a storm's agents are all trying.
   */
  private async sweep(held: boolean): Promise<void> {
    const silenceMs = this.silenceMs;
    const graced =
      held && this.sweepingSince !== undefined && performance.now() - this.sweepingSince >= silenceMs;
    if (!graced) {
      this.heldBackSince = undefined;
      this.holdLimitLogged = false;
    }
    const judging = graced && (await this.pastBacklog());
    const marked = judging ? await this.repository.markUnreachable(silenceMs, SESSION_TTL_MS) : [];
    for (const { id, previous, silent_ms } of marked) {
      const w = this.live.get(id);
      if (w?.lastHeartbeat && Date.now() - w.lastHeartbeat.getTime() < silenceMs) {
        this.markDirty(id, w); // heard from after the last flush: the next flush writes its real status
        continue;
      }
      this.transition(id, previous, 'unreachable', 'missed_heartbeats', {
        judged_by: 'sweep',
        silent_ms,
      });
      if (w) w.status = 'unreachable';
    }
    this.counts = await this.repository.countByStatus();
    this.healthyGauge.set(this.counts.healthy ?? 0);
  }

  private transition(
    workerId: string,
    from: WorkerState,
    to: WorkerState,
    reason: string,
    details?: Record<string, unknown>,
  ): void {
    this.transitions.inc({ from, to });
    const level = to === 'unhealthy' || to === 'unreachable' ? 'warn' : 'log';
    this.logger[level]({ worker_id: workerId, from, to, reason, ...details }, `worker ${from} -> ${to}`);
  }

  private workersCheck(): string {
    const bad = (this.counts.unhealthy ?? 0) + (this.counts.unreachable ?? 0);
    return bad === 0 ? 'ok' : `${bad} unhealthy or unreachable`;
  }

  private async findOwned(caller: Caller, id: string): Promise<WorkerEntity> {
    const worker = isUuid(id) ? await this.repository.findInOwner(caller.owner, id) : null;
    if (!worker) throw new NotFoundError(`No worker ${id}.`);
    return worker;
  }

  /** The live state on this replica, else the stored one. */
  statusOf(worker: WorkerEntity): WorkerState {
    return this.live.get(worker.id)?.status ?? worker.status;
  }

  /** The document's worker fields plus CONTRACT.md's; the live state wins over the stored one. */
  private view(worker: WorkerEntity): WorkerView {
    const live = this.live.get(worker.id);
    const lastHeartbeat = live?.lastHeartbeat ?? worker.lastHeartbeat;
    return {
      id: worker.id,
      name: worker.name,
      status: live?.status ?? worker.status,
      last_heartbeat: lastHeartbeat?.toISOString() ?? null,
      metrics: live?.metrics ?? worker.metrics,
      hostname: worker.hostname,
      // Without an operator's --address: where the agent connects from (to whichever replica).
      address: worker.address || live?.connectedFrom || (this.directory.get(worker.id)?.remoteHost ?? ''),
      os: worker.os,
      arch: worker.arch,
      driver: worker.driver,
      labels: worker.labels,
      version: worker.version,
      connected: this.directory.isConnected(worker.id),
      approved_at: worker.approvedAt?.toISOString() ?? null,
      created_at: worker.createdAt.toISOString(),
    };
  }
}

const round = (n: number): number => Math.round(Math.min(100, Math.max(0, n)) * 10) / 10;
