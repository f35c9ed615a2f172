import { Inject, Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import type { Caller } from '../common/request-context.js';
import { every } from '../common/periodic.js';
import { InjectMetric } from '@willsoto/nestjs-prometheus';
import type { Counter } from 'prom-client';
import type { StateReportMsg } from '../../contracts/agent-protocol/index.js';
import { AgentSessions, type AgentStateHandler } from '../agent-gateway/agent-sessions.js';
import { Leases } from '../common/leases.js';
import { AuditService } from '../audit/audit.service.js';
import { AppConfig } from '../config/config.js';
import type { DriftResolve, DriftStatus, DriftView } from '../../contracts/api/drift.js';
import { METRIC } from '../metrics/metric-names.js';
import type { StackEntity } from '../stacks/entities/stack.entity.js';
import { STACKS_FOR_DRIFT, type StacksForDrift } from '../stacks/stacks-for-drift.js';
import { detectDrift, key, type DriftFinding } from './detect-drift.js';
import { nothingToResolve, unknownResources } from './drift.errors.js';
import { DriftRepository } from './drift.repository.js';
import { DriftItemEntity } from './entities/drift-item.entity.js';

/** Items kept per stack and characters kept per value. */
const MAX_ITEMS = 500;
const MAX_VALUE = 2000;

/** Stacks whose job is under way are not compared: the node is between two states on purpose. */
const BUSY: readonly string[] = ['deploying', 'destroying', 'draft'];

/** The scheduled drift check runs on the replica holding this lease. */
export const DRIFT_CHECK_LEASE = 'drift-check';

/**
 * Drift: compares each placed stack's current revision with its agent's state reports, on every
 * report (on the replica holding the agent's stream) and on the DRIFT_CHECK_INTERVAL schedule (on
 * the lease holder); keeps the items with first and last seen; honours the stack's ignore rules in
 * its status and in every apply; resolves by a provision job.
 */
@Injectable()
export class DriftService implements AgentStateHandler, OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('drift');
  /** Checks per stack run one after another. */
  private readonly queues = new Map<string, Promise<void>>();
  /** The newest report per worker not yet checked; a worker has at most one check running. */
  private readonly pending = new Map<string, StateReportMsg>();
  private readonly checking = new Set<string>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly repository: DriftRepository,
    @Inject(STACKS_FOR_DRIFT) private readonly stacks: StacksForDrift,
    private readonly sessions: AgentSessions,
    private readonly leases: Leases,
    private readonly audit: AuditService,
    private readonly config: AppConfig,
    @InjectMetric(METRIC.driftDetected) private readonly detected: Counter<string>,
  ) {}

  onModuleInit(): void {
    this.sessions.addStateHandler(this);
    const interval = this.config.driftCheckIntervalMs;
    // One replica at a time checks on schedule: every replica reads every agent's report.
    this.timer = every(this.logger, 'drift-check', interval, async () => {
      if (await this.leases.acquire(DRIFT_CHECK_LEASE, interval + 10_000)) await this.checkAll();
    });
  }

  async onModuleDestroy(): Promise<void> {
    clearInterval(this.timer);
    // Given up at once: another replica need not wait out the TTL.
    await this.leases.release(DRIFT_CHECK_LEASE).catch(() => undefined);
  }

  // ---- the operator API ----

  async get(caller: Caller, stackId: string): Promise<DriftView> {
    const stack = await this.stacks.owned(caller, stackId);
    return this.view(stack, await this.repository.items(stack.id));
  }

  /** Adds ignore rules; 422 for names that are neither services nor drifted resources. */
  async ignore(caller: Caller, stackId: string, resources: string[]): Promise<DriftView> {
    const stack = await this.stacks.owned(caller, stackId);
    const items = await this.repository.items(stack.id);
    const definition = await this.stacks.definitionAt(stack.id, stack.revision);
    const known = new Set([
      ...(definition?.services.map((s) => s.name) ?? []),
      ...items.map((i) => i.resource),
    ]);
    const unknown = resources.map((name, index) => ({ name, index })).filter(({ name }) => !known.has(name));
    if (unknown.length > 0) throw unknownResources(unknown);
    const ignores = [...new Set([...stack.driftIgnores, ...resources])].sort();
    this.logger.log({ stack_id: stack.id, resources }, 'drift ignore rules added');
    return this.setIgnores(stack, items, ignores, { resources });
  }

  /** Removes ignore rules. */
  async unignore(caller: Caller, stackId: string, resources: string[]): Promise<DriftView> {
    const stack = await this.stacks.owned(caller, stackId);
    const items = await this.repository.items(stack.id);
    const ignores = stack.driftIgnores.filter((r) => !resources.includes(r));
    return this.setIgnores(stack, items, ignores, { removed: resources });
  }

  /** Stores the stack's ignore rules, its drift status under them, and the audit record. */
  private async setIgnores(
    stack: StackEntity,
    items: DriftItemEntity[],
    ignores: string[],
    details: Record<string, unknown>,
  ): Promise<DriftView> {
    await this.stacks.setDriftIgnores(stack.id, ignores);
    const updated = { ...stack, driftIgnores: ignores };
    await this.refreshStatus(updated, items);
    await this.audit.record({ action: 'drift.ignored', owner: stack.owner, target: stack.id, details });
    return this.view({ ...updated, driftStatus: this.statusOf(updated, items) }, items);
  }

  /** A provision job that re-applies the current revision, replacing what was modified; 409 if nothing drifted. */
  async resolve(caller: Caller, stackId: string): Promise<DriftResolve> {
    const stack = await this.stacks.owned(caller, stackId);
    const items = (await this.repository.items(stack.id)).filter(
      (i) => !stack.driftIgnores.includes(i.resource),
    );
    if (items.length === 0) throw nothingToResolve(stackId);
    const replace = [...new Set(items.filter((i) => i.kind === 'modified').map((i) => i.resource))];
    const job = await this.stacks.deploy(caller, stack.id, replace);
    await this.audit.record({
      action: 'drift.resolve_requested',
      owner: stack.owner,
      target: stack.id,
      details: { job_id: job.id, resources: [...new Set(items.map((i) => i.resource))] },
    });
    this.logger.log(
      { stack_id: stack.id, job_id: job.id, items: items.length, replace },
      'drift resolve requested',
    );
    return { job_id: job.id, job };
  }

  // ---- detection ----

  /** Coalesced: a worker that reports faster than its checks run only has its newest report checked. */
  state(workerId: string, report: StateReportMsg): void {
    this.pending.set(workerId, report);
    if (this.checking.has(workerId)) return;
    this.checking.add(workerId);
    void (async () => {
      try {
        for (let next = this.pending.get(workerId); next; next = this.pending.get(workerId)) {
          this.pending.delete(workerId);
          await this.checkWorker(workerId, next, false).catch((err: unknown) =>
            this.logger.warn({ err, worker_id: workerId }, 'drift check failed'),
          );
        }
      } finally {
        this.checking.delete(workerId);
      }
    })();
  }

  disconnected(workerId: string): void {
    // Items stay as they were; the status answers unknown while the worker's report is missing.
    this.pending.delete(workerId);
  }

  /** The scheduled check: every placed stack whose worker's agent has reported, to any replica. */
  async checkAll(): Promise<void> {
    try {
      const byWorker = new Map<string, StackEntity[]>();
      for (const stack of await this.stacks.allPlaced()) {
        if (!this.stacks.reportOf(stack.workerId!)) continue;
        const list = byWorker.get(stack.workerId!) ?? [];
        list.push(stack);
        byWorker.set(stack.workerId!, list);
      }
      for (const [workerId, stacks] of byWorker) {
        const report = this.stacks.reportOf(workerId);
        if (!report) continue;
        for (const stack of stacks)
          await this.checkStack(stack, workerId, report.services, report.lastJobs, true);
      }
    } catch (err) {
      this.logger.warn({ err }, 'scheduled drift check failed');
    }
  }

  private async checkWorker(workerId: string, report: StateReportMsg, touch: boolean): Promise<void> {
    const stacks = await this.stacks.placedOn(workerId);
    for (const stack of stacks) {
      await this.checkStack(stack, workerId, report.services ?? [], report.last_jobs ?? {}, touch);
    }
  }

  private checkStack(
    stack: StackEntity,
    workerId: string,
    services: StateReportMsg['services'],
    lastJobs: Record<string, string>,
    touch: boolean,
  ): Promise<void> {
    const previous = this.queues.get(stack.id) ?? Promise.resolve();
    const next = previous.then(async () => {
      const skip = (reason: string) =>
        this.logger.debug({ stack_id: stack.id, worker_id: workerId, reason }, 'drift check skipped');
      if (BUSY.includes(stack.status)) return skip(`the stack is ${stack.status}`);
      // A report taken before the node finished the stack's last job says nothing about drift.
      if (stack.lastJobId === null || lastJobs[stack.id] !== stack.lastJobId)
        return skip("the report predates the stack's last job");
      const definition = await this.stacks.definitionAt(stack.id, stack.revision);
      if (!definition) return skip(`revision ${stack.revision} not found`);
      const findings = detectDrift(
        definition.services,
        services.filter((s) => s.stack_id === stack.id),
      );
      await this.record(stack, workerId, findings, touch);
    });
    const settled = next.catch((err: unknown) =>
      this.logger.warn({ err, stack_id: stack.id }, 'drift check of a stack failed'),
    );
    this.queues.set(stack.id, settled);
    void settled.then(() => {
      if (this.queues.get(stack.id) === settled) this.queues.delete(stack.id);
    });
    return settled;
  }

  /** Writes what changed; counts and logs each new item once. */
  private async record(
    stack: StackEntity,
    workerId: string,
    findings: DriftFinding[],
    touch: boolean,
  ): Promise<void> {
    // Read each time: another replica may have written the stack's items since.
    const current = new Map((await this.repository.items(stack.id)).map((i) => [key(i), i]));
    const now = new Date();
    const seen = new Set<string>();
    const added: DriftItemEntity[] = [];
    const kept: DriftItemEntity[] = [];
    for (const raw of findings.slice(0, MAX_ITEMS)) {
      // Names and values can come from the node (a container's labels and environment): bounded.
      const f = {
        ...raw,
        resource: raw.resource.slice(0, 253),
        field: raw.field.slice(0, 300),
        desired: raw.desired?.slice(0, MAX_VALUE) ?? null,
        actual: raw.actual?.slice(0, MAX_VALUE) ?? null,
      };
      const k = key(f);
      seen.add(k);
      const existing = current.get(k);
      if (!existing) {
        added.push(
          Object.assign(new DriftItemEntity(), {
            stackId: stack.id,
            resource: f.resource,
            kind: f.kind,
            field: f.field,
            workerId,
            desired: f.desired,
            actual: f.actual,
            detectedAt: now,
            lastSeen: now,
          }),
        );
      } else if (touch || existing.actual !== f.actual || existing.desired !== f.desired) {
        kept.push(Object.assign(existing, { desired: f.desired, actual: f.actual, workerId, lastSeen: now }));
      }
    }
    const removed = [...current.entries()].filter(([k]) => !seen.has(k)).map(([, item]) => item);
    const status = findings.some((f) => !stack.driftIgnores.includes(f.resource)) ? 'drifted' : 'in_sync';
    if (added.length + removed.length + kept.length > 0) {
      await this.repository.apply(stack.id, added, removed, kept);
    }
    this.logger.debug(
      {
        stack_id: stack.id,
        worker_id: workerId,
        trigger: touch ? 'schedule' : 'report',
        status,
        findings: findings.length,
        added: added.length,
        resolved: removed.length,
        ignored: findings.filter((f) => stack.driftIgnores.includes(f.resource)).length,
      },
      'drift computed',
    );
    if (touch || status !== stack.driftStatus || added.length + removed.length > 0) {
      await this.stacks.setDriftStatus(stack.id, status, now);
      stack.driftStatus = status;
    }
    for (const item of added) {
      this.detected.inc({ kind: item.kind });
      this.logger.warn(
        {
          stack_id: stack.id,
          worker_id: workerId,
          resource: item.resource,
          kind: item.kind,
          field: item.field || undefined,
          ignored: stack.driftIgnores.includes(item.resource),
        },
        'drift detected',
      );
    }
    if (added.length > 0) {
      await this.audit.record({
        action: 'drift.detected',
        owner: stack.owner,
        actor: 'system',
        target: stack.id,
        details: {
          items: added.map((i) => ({ resource: i.resource, kind: i.kind, field: i.field || null })),
        },
      });
    }
    for (const item of removed) {
      this.logger.log(
        {
          stack_id: stack.id,
          worker_id: workerId,
          resource: item.resource,
          kind: item.kind,
          field: item.field || undefined,
        },
        'drift resolved',
      );
    }
  }

  private async refreshStatus(stack: StackEntity, items: DriftItemEntity[]): Promise<void> {
    if (stack.driftCheckedAt === null) return;
    const status = this.statusOf(stack, items);
    if (status !== stack.driftStatus)
      await this.stacks.setDriftStatus(stack.id, status, stack.driftCheckedAt);
  }

  private statusOf(stack: StackEntity, items: DriftItemEntity[]): DriftStatus {
    if (stack.driftCheckedAt === null) return 'unknown';
    return items.some((i) => !stack.driftIgnores.includes(i.resource)) ? 'drifted' : 'in_sync';
  }

  private view(stack: StackEntity, items: DriftItemEntity[]): DriftView {
    // Unknown until the stack's worker has reported (to this replica) after the stack's last job.
    const report = stack.workerId ? this.stacks.reportOf(stack.workerId) : undefined;
    const reported =
      report !== undefined && stack.lastJobId !== null && report.lastJobs[stack.id] === stack.lastJobId;
    const status: DriftStatus =
      !reported || BUSY.includes(stack.status) || stack.driftCheckedAt === null
        ? 'unknown'
        : stack.driftStatus;
    return {
      stack_id: stack.id,
      status,
      checked_at: stack.driftCheckedAt?.toISOString() ?? null,
      revision: stack.revision,
      items: items.map((i) => ({
        resource: i.resource,
        kind: i.kind,
        worker_id: i.workerId,
        field: i.field || null,
        desired: i.desired,
        actual: i.actual,
        ignored: stack.driftIgnores.includes(i.resource),
        detected_at: i.detectedAt.toISOString(),
        last_seen: i.lastSeen.toISOString(),
      })),
      ignored_resources: stack.driftIgnores,
    };
  }
}
