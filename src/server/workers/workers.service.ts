import { isUuid } from '../common/ids.js';
import { every } from '../common/periodic.js';
import { Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { InjectMetric } from '@willsoto/nestjs-prometheus';
import { randomUUID, timingSafeEqual } from 'node:crypto';
import type { Counter, Gauge } from 'prom-client';
import type { ConnectivityReportMsg, HeartbeatMsg, HelloMsg } from '../../contracts/agent-protocol/index.js';
import { IDENTITY_REVOKED } from '../../contracts/agent-protocol/index.js';
import {
  AgentSessions,
  type AgentConnection,
  type AgentEventsHandler,
} from '../agent-gateway/agent-sessions.js';
import { CaService } from '../agent-gateway/ca.service.js';
import { CertificatesService } from '../agent-gateway/certificates.service.js';
import { GatewayServer } from '../agent-gateway/gateway.server.js';
import { AuditService } from '../audit/audit.service.js';
import { RateLimitsService } from '../auth/rate-limits.service.js';
import { AppError, NotFoundError } from '../common/app-error.js';
import { type Page, cursorPage, byCreation } from '../common/pagination.js';
import { RequestContext, type Caller } from '../common/request-context.js';
import { randomToken, tokenDigest } from '../common/secrets.js';
import { AppConfig } from '../config/config.js';
import type { EnrollmentResult, EnrollmentStatus, WorkerView } from '../../contracts/api/workers.js';
import { OrchestratorHealthService } from '../health/orchestrator-health.service.js';
import { METRIC } from '../metrics/metric-names.js';
import { ConnectivityService } from './connectivity.service.js';
import type { EnrollDto, EnrollmentStatusDto } from './dto/enroll.dto.js';
import type { ListWorkersDto } from './dto/list-workers.dto.js';
import { WorkerEntity } from './entities/worker.entity.js';
import { JoinTokensService } from './join-tokens.service.js';
import { validateLabels } from './labels.js';
import { announcedProbePort, probeAddress, probeHost } from './probe-address.js';
import {
  nextState,
  type NodeMetrics,
  type Thresholds,
  type WorkerEvent,
  type WorkerState,
} from './worker-state.js';
import {
  invalidEnrollmentSecret,
  invalidJoinToken,
  notPending,
  tooManyEnrollmentFailures,
} from './workers.errors.js';
import { WorkersRepository } from './workers.repository.js';

/** Missing this many heartbeat intervals makes a worker unreachable. */
const MISSED_INTERVALS = 3;

/** A connected or recently connected worker as this replica sees it; the hot path's state. */
interface LiveWorker {
  owner: string;
  status: WorkerState;
  metrics: NodeMetrics | null;
  lastHeartbeat: Date | null;
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
 * only memory; a timer flushes the changed workers in one statement and runs the unreachable sweep
 * as one statement. Every status change goes through `transition` (logged with worker_id, counted).
 */
@Injectable()
export class WorkersService implements AgentEventsHandler, OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('workers');
  private readonly live = new Map<string, LiveWorker>();
  private readonly thresholds: Thresholds;
  private timer: NodeJS.Timeout | undefined;
  private lastSweep = 0;
  private ticking = false;
  private counts: Record<string, number> = {};

  constructor(
    private readonly repository: WorkersRepository,
    private readonly joinTokens: JoinTokensService,
    private readonly certificates: CertificatesService,
    private readonly ca: CaService,
    private readonly sessions: AgentSessions,
    private readonly gateway: GatewayServer,
    private readonly audit: AuditService,
    private readonly limits: RateLimitsService,
    private readonly health: OrchestratorHealthService,
    private readonly links: ConnectivityService,
    private readonly config: AppConfig,
    @InjectMetric(METRIC.workersConnected) private readonly connectedGauge: Gauge<string>,
    @InjectMetric(METRIC.workersHealthy) private readonly healthyGauge: Gauge<string>,
    @InjectMetric(METRIC.workerTransitions) private readonly transitions: Counter<string>,
  ) {
    this.thresholds = {
      degradedPercent: config.workerDegradedPercent,
      unhealthyPercent: config.workerUnhealthyPercent,
    };
  }

  onModuleInit(): void {
    this.sessions.setHandler(this);
    this.health.registerCheck('workers', () => this.workersCheck());
    const tick = Math.max(50, Math.min(1000, Math.floor(this.config.heartbeatIntervalMs / 2)));
    this.timer = every(this.logger, 'worker-states', tick, () => this.tick());
  }

  async onModuleDestroy(): Promise<void> {
    clearInterval(this.timer);
    await this.flush().catch((err: unknown) => this.logger.warn({ err }, 'final heartbeat flush failed'));
  }

  // ---- enrollment (public, authenticated by the join token or the enrollment secret) ----

  async enroll(dto: EnrollDto): Promise<EnrollmentResult> {
    const ip = RequestContext.ip();
    const wait = this.limits.authBlockedFor(undefined, ip);
    if (wait > 0) throw tooManyEnrollmentFailures(wait);
    // Input first, so a malformed request does not count as a use of the token.
    const requestedLabels = validateLabels(dto.labels, 'labels');
    await this.certificates.checkCsr(dto.csr);
    const token = await this.joinTokens.redeem(dto.token);
    if (!token) {
      this.limits.recordAuthFailure(undefined, ip);
      throw invalidJoinToken();
    }
    // The operator's labels (on the join token) win over what the node says about itself.
    const labels = validateLabels({ ...requestedLabels, ...token.labels }, 'labels');
    // An agent whose worker the operator deleted comes back as pending, even with a pre-approved token.
    const deletedBefore =
      dto.previous_worker_id !== undefined && (await this.certificates.wasRevoked(dto.previous_worker_id));
    const preApproved = token.preApproved && !deletedBefore;
    const secret = randomToken('soes_', 32);
    const now = new Date();
    const worker = Object.assign(new WorkerEntity(), {
      id: randomUUID(),
      owner: token.owner,
      name: dto.name ?? dto.hostname.split('.')[0].toLowerCase().slice(0, 63),
      hostname: dto.hostname,
      address: dto.address ?? '',
      os: dto.os,
      arch: dto.arch,
      version: dto.version,
      driver: dto.driver,
      labels,
      status: preApproved ? nextState('pending', { type: 'approved' }, this.thresholds) : 'pending',
      joinTokenId: token.id,
      csr: dto.csr,
      enrollmentSecretHash: tokenDigest(secret),
      metrics: null,
      lastHeartbeat: null,
      approvedAt: preApproved ? now : null,
      createdAt: now,
    });
    await this.repository.insert(worker);
    const certificate = preApproved ? (await this.certificates.issue(worker.id, dto.csr)).pem : null;
    await this.audit.record({
      action: 'worker.enrolled',
      owner: worker.owner,
      actor: `join-token:${token.id}`,
      target: worker.id,
      details: {
        hostname: worker.hostname,
        pre_approved: preApproved,
        previous_worker_id: dto.previous_worker_id ?? null,
      },
    });
    this.logger.log(
      { worker_id: worker.id, status: worker.status, hostname: worker.hostname },
      'worker enrolled',
    );
    return {
      worker_id: worker.id,
      status: worker.status,
      enrollment_secret: secret,
      ca_certificate: this.ca.caPem,
      ca_fingerprint: this.ca.fingerprint,
      certificate,
      agent_endpoint: this.gateway.endpoint,
      heartbeat_interval_ms: this.config.heartbeatIntervalMs,
    };
  }

  /** A pending agent asks whether it was approved; once it is, it gets its certificate. */
  async enrollmentStatus(dto: EnrollmentStatusDto): Promise<EnrollmentStatus> {
    const ip = RequestContext.ip();
    const wait = this.limits.authBlockedFor(undefined, ip);
    if (wait > 0) throw tooManyEnrollmentFailures(wait);
    const worker = await this.repository.findById(dto.worker_id);
    const expected = Buffer.from(worker?.enrollmentSecretHash ?? tokenDigest('none'));
    const actual = Buffer.from(tokenDigest(dto.enrollment_secret));
    if (!worker || expected.length !== actual.length || !timingSafeEqual(expected, actual)) {
      this.limits.recordAuthFailure(undefined, ip);
      throw invalidEnrollmentSecret();
    }
    if (worker.status === 'pending') return { status: 'pending', certificate: null };
    return {
      status: this.statusOf(worker),
      certificate: (await this.certificates.currentFor(worker.id)) ?? null,
    };
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
    this.links.peerDown(worker.id);
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
    const worker = await this.repository.findById(workerId);
    if (!worker) throw new AppError(401, 'unauthorized', 'Unauthorized', IDENTITY_REVOKED);
    if (worker.status === 'pending')
      throw new AppError(403, 'forbidden', 'Forbidden', 'the worker is not approved');
    this.live.set(workerId, {
      owner: worker.owner,
      status: worker.status,
      metrics: worker.metrics,
      lastHeartbeat: worker.lastHeartbeat,
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
    this.connectedGauge.set(this.sessions.count + 1);
    // Peers are sent to the address we know for this agent, at the port of its probe listener.
    if (worker.address && !probeHost(worker.address))
      this.logger.warn(
        { worker_id: workerId },
        'enrolled address is not a host; probing where it connects from',
      );
    const probeKey = this.links.peerUp(
      workerId,
      worker.owner,
      probeAddress(worker.address, connection.remoteHost, announcedProbePort(hello)),
    );
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
    worker.dirty = true;
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
    if (worker) worker.connected = false;
    this.links.peerDown(workerId);
    this.connectedGauge.set(this.sessions.count);
    this.logger.log({ worker_id: workerId }, 'agent disconnected');
  }

  /** The owner's workers connected to this replica, for placement. */
  liveWorkers(owner: string): LiveWorkerView[] {
    const out: LiveWorkerView[] = [];
    for (const [id, w] of this.live) {
      if (w.owner !== owner || !w.connected || !this.sessions.isConnected(id)) continue;
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
    return probeHost(worker.address) ?? this.live.get(workerId)?.connectedFrom;
  }

  // ---- timers ----

  private async tick(): Promise<void> {
    if (this.ticking) return;
    this.ticking = true;
    try {
      await this.flush();
      if (Date.now() - this.lastSweep >= this.config.heartbeatIntervalMs) {
        this.lastSweep = Date.now();
        await this.sweep();
      }
    } catch (err) {
      this.logger.warn({ err }, 'worker state flush or sweep failed; retrying');
    } finally {
      this.ticking = false;
    }
  }

  /** Writes every changed worker in one statement, then forgets disconnected ones. */
  private async flush(): Promise<void> {
    const rows = [];
    for (const [id, w] of this.live) {
      if (w.dirty && w.metrics && w.lastHeartbeat) {
        rows.push({ id, status: w.status, metrics: w.metrics, lastHeartbeat: w.lastHeartbeat });
        w.dirty = false;
      }
    }
    try {
      await this.repository.flushHeartbeats(rows);
    } catch (err) {
      for (const row of rows) {
        const w = this.live.get(row.id);
        if (w) w.dirty = true;
      }
      throw err;
    }
    for (const [id, w] of this.live) if (!w.connected && !w.dirty) this.live.delete(id);
    this.connectedGauge.set(this.sessions.count);
  }

  /** One statement marks silent workers unreachable; a worker heard from meanwhile is restored. */
  private async sweep(): Promise<void> {
    const silenceMs = MISSED_INTERVALS * this.config.heartbeatIntervalMs;
    const marked = await this.repository.markUnreachable(silenceMs);
    for (const { id, previous } of marked) {
      const w = this.live.get(id);
      if (w?.lastHeartbeat && Date.now() - w.lastHeartbeat.getTime() < silenceMs) {
        w.dirty = true; // heard from after the last flush: the next flush writes its real status
        continue;
      }
      this.transition(id, previous, 'unreachable', 'missed_heartbeats');
      if (w) w.status = 'unreachable';
    }
    this.counts = await this.repository.countByStatus();
    this.healthyGauge.set(this.counts.healthy ?? 0);
  }

  private transition(workerId: string, from: WorkerState, to: WorkerState, reason: string): void {
    this.transitions.inc({ from, to });
    const level = to === 'unhealthy' || to === 'unreachable' ? 'warn' : 'log';
    this.logger[level]({ worker_id: workerId, from, to, reason }, `worker ${from} -> ${to}`);
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

  private statusOf(worker: WorkerEntity): WorkerState {
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
      // Without an operator's --address: where the agent last connected from (to this replica).
      address: worker.address || (live?.connectedFrom ?? ''),
      os: worker.os,
      arch: worker.arch,
      driver: worker.driver,
      labels: worker.labels,
      version: worker.version,
      connected: this.sessions.isConnected(worker.id),
      approved_at: worker.approvedAt?.toISOString() ?? null,
      created_at: worker.createdAt.toISOString(),
    };
  }
}

const round = (n: number): number => Math.round(Math.min(100, Math.max(0, n)) * 10) / 10;
