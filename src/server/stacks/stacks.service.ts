import { isUuid } from '../common/ids.js';
import { every } from '../common/periodic.js';
import { Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { InjectMetric } from '@willsoto/nestjs-prometheus';
import { randomUUID } from 'node:crypto';
import type { Gauge } from 'prom-client';
import type { EntityManager } from 'typeorm';
import { AuditService, type AuditInput } from '../audit/audit.service.js';
import { SecretBox } from '../common/secret-box.js';
import { AppConfig } from '../config/config.js';
import { getCatalog } from './catalog/catalog.js';
import { credentialRoles, deploySpecs } from './monitoring/deploy-values.js';
import { MonitoringClientsService } from './monitoring/monitoring-clients.service.js';
import { logPushUrl } from './monitoring/monitoring-files.js';
import { type Page, cursorPage, byCreation } from '../common/pagination.js';
import type { Caller } from '../common/request-context.js';
import type { JobEntity, JobPayload } from '../jobs/entities/job.entity.js';
import type { JobView } from '../../contracts/api/jobs.js';
import type {
  StackHealthView,
  StackRevision,
  StackRevisionList,
  StackStatus,
  StackView,
} from '../../contracts/api/stacks.js';
import type { StackJobHooks } from '../jobs/job-lifecycle.js';
import { JobsService, type NewJob, view as jobView } from '../jobs/jobs.service.js';
import { METRIC } from '../metrics/metric-names.js';
import { DefinitionService } from './definition/definition.service.js';
import type { StackDefinition } from './definition/definition.types.js';
import type { PageQueryDto } from '../common/pagination.js';
import type { DefinitionRequest } from './definition/definition-request.js';
import { exportCompose } from './compose/export-compose.js';
import { ValidationFailedError } from '../common/app-error.js';
import { stackVolumesLost } from './stacks.errors.js';
import { StackRevisionEntity } from './entities/stack-revision.entity.js';
import { StackEntity } from './entities/stack.entity.js';
import { destroyPayload, provisionPayload } from './service-spec.js';
import { completedOneShot, overallHealth, serviceHealth } from './stack-health.js';
import { StackPublishing, type FinishedStack } from './stack-publishing.js';
import { StackReportsService } from './stack-reports.service.js';
import {
  replaceRaced,
  revisionNotFound,
  stackBeingDestroyed,
  stackNameTaken,
  stackNotFound,
  stackRenamed,
} from './stacks.errors.js';
import { isNameConflict, StacksRepository } from './stacks.repository.js';

/** What {@link StacksService.finishingMany} wrote: the jobs it took, their stacks as they were. */
interface FinishedStacks {
  batch: JobEntity[];
  previous: Map<string, FinishedStack>;
  /** The succeeded destroys whose stacks the transaction deleted, and those stacks' owners. */
  destroyed: { job: JobEntity; owner: string }[];
}

/** What a deploy read: the stack, its current definition and that revision's job payload. */
interface DeployedFrom {
  stack: StackEntity;
  definition: StackDefinition;
  payload: JobPayload;
  /** What it holds, estimated: the definition's and the payload's JSON. */
  bytes: number;
}

/** Stacks whose last deploy this replica remembers, at most, and what they may hold in all. */
const DEPLOYED_FROM_ENTRIES = 4096;
const DEPLOYED_FROM_BYTES = 16 * 1024 * 1024;
/** A stack whose definition and payload take more is not remembered (definitions go to 512 KiB). */
const DEPLOYED_FROM_ENTRY_BYTES = 64 * 1024;

/** How often stack_stacks_total is re-counted (stacks change on other replicas too). */
const GAUGE_REFRESH_MS = 15_000;

/**
 * Stacks: definitions stored as revisions, deploy and destroy through jobs, stack health from the
 * agents' state reports (stack-reports.service.ts), and the bookkeeping of the stacks' jobs
 * (StackJobHooks). Stacks belong to the caller's owner. Drift sees stacks through
 * stacks-for-drift.ts.
 */
@Injectable()
export class StacksService implements StackJobHooks, OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('stacks');
  private readonly definitionCache = new Map<string, StackDefinition>();
  /**
   * What this replica's last deploy of a stack read (the stack, its definition), by stack id, for
   * the next deploy's one-statement path; the statement checks it still holds.
   */
  private readonly deployedFrom = new Map<string, DeployedFrom>();
  /** The sum of the entries' `bytes`. */
  private deployedFromBytes = 0;
  private gaugeTimer: NodeJS.Timeout | undefined;
  /** Counts started, so that an older count finishing late does not overwrite a newer one. */
  private gaugeReads = 0;

  constructor(
    private readonly repository: StacksRepository,
    private readonly definitions: DefinitionService,
    private readonly jobs: JobsService,
    private readonly reports: StackReportsService,
    private readonly publishing: StackPublishing,
    private readonly audit: AuditService,
    private readonly monitoringClients: MonitoringClientsService,
    private readonly config: AppConfig,
    private readonly box: SecretBox,
    @InjectMetric(METRIC.stacks) private readonly stacksGauge: Gauge<string>,
  ) {}

  async onModuleInit(): Promise<void> {
    this.jobs.setStackHooks(this);
    await this.refreshGauge();
    // Other replicas create and delete stacks too.
    this.gaugeTimer = every(this.logger, 'stack-count', GAUGE_REFRESH_MS, () => this.refreshGauge());
  }

  onModuleDestroy(): void {
    clearInterval(this.gaugeTimer);
  }

  // ---- CRUD ----

  async create(caller: Caller, request: DefinitionRequest): Promise<StackView> {
    const { definition, warnings } = this.definitions.parse(request);
    const now = new Date();
    const stack = Object.assign(new StackEntity(), {
      id: randomUUID(),
      owner: caller.owner,
      name: definition.name,
      status: 'draft' as const,
      revision: 1,
      deployedRevision: null,
      workerId: null,
      reservedCpu: 0,
      reservedMemory: 0,
      lastJobId: null,
      driftIgnores: [],
      driftStatus: 'unknown' as const,
      driftCheckedAt: null,
      createdAt: now,
      updatedAt: now,
    });
    const revision = this.revisionOf(stack.id, 1, request, definition, caller.clientId, now);
    try {
      await this.repository.create(stack, revision);
    } catch (err) {
      if (isNameConflict(err)) throw stackNameTaken(definition.name);
      throw err;
    }
    await this.audit.record({
      action: 'stack.created',
      owner: stack.owner,
      target: stack.id,
      details: { name: stack.name },
    });
    this.logger.log({ stack_id: stack.id, name: stack.name }, 'stack created');
    await this.refreshGauge();
    return { ...this.view(stack, definition), warnings };
  }

  list(caller: Caller, query: PageQueryDto): Promise<Page<StackView>> {
    const owner = caller.owner;
    return cursorPage(
      query,
      (take, after) => this.repository.listInOwner(owner, take, after),
      byCreation,
      async (stack) => this.view(stack, await this.definitionOf(stack)),
    );
  }

  async get(caller: Caller, id: string): Promise<StackView> {
    const stack = await this.owned(caller, id);
    return this.view(stack, await this.definitionOf(stack));
  }

  async revisions(caller: Caller, id: string): Promise<StackRevisionList> {
    const stack = await this.owned(caller, id);
    const rows = await this.repository.listRevisions(stack.id);
    return {
      stack_id: stack.id,
      revisions: rows.map((r) => ({
        revision: r.revision,
        created_at: r.createdAt.toISOString(),
        created_by: r.createdBy,
        current: r.revision === stack.revision,
        deployed: r.revision === stack.deployedRevision,
      })),
    };
  }

  async revision(caller: Caller, id: string, revision: number): Promise<StackRevision> {
    const stack = await this.owned(caller, id);
    const row = await this.repository.revision(stack.id, revision);
    if (!row) throw revisionNotFound(id, revision);
    return {
      stack_id: stack.id,
      revision: row.revision,
      created_at: row.createdAt.toISOString(),
      source: row.source,
      definition: row.definition,
      reading: row.reading ?? null,
      variables: this.variableNames(row),
    };
  }

  /**
   * The current revision as YAML: as written, or `format=compose` (what runs, as a Compose file), or
   * `format=stack` (our format; the file as written when it is ours).
   */
  async definitionFile(caller: Caller, id: string, query: Record<string, unknown>): Promise<string> {
    const format = query.format;
    const bad = (path: string, message: string) =>
      new ValidationFailedError([{ path, message, category: 'invalid_value' }], message);
    for (const key of Object.keys(query))
      if (key !== 'format') throw bad(`query.${key}`, `${key} is not a parameter of this operation`);
    if (format !== undefined && format !== 'compose' && format !== 'stack')
      throw bad('query.format', 'format is compose or stack');
    const stack = await this.owned(caller, id);
    const row = await this.repository.revision(stack.id, stack.revision);
    if (!row) throw stackNotFound(stack.id);
    const written = row.definition.format ?? 'stack';
    if (format === undefined || format === written)
      return format === 'compose' ? exportCompose(row.definition) : row.source;
    if (format === 'compose') return exportCompose(row.definition);
    throw bad(
      'query.format',
      'this stack is written as a Compose file, which says more than our format can (volumes, files, container options): export it with format=compose',
    );
  }

  /** A new revision; the stack keeps running the deployed one until the next deploy. */
  async replace(caller: Caller, id: string, request: DefinitionRequest): Promise<StackView> {
    const stack = await this.owned(caller, id);
    if (stack.status === 'destroying') throw stackBeingDestroyed(id);
    const { definition, warnings } = this.definitions.parse(request);
    if (definition.name !== stack.name) throw stackRenamed(stack.name);
    const now = new Date();
    const next = stack.revision + 1;
    if (
      !(await this.repository.addRevision(
        stack,
        this.revisionOf(stack.id, next, request, definition, caller.clientId, now),
      ))
    )
      throw replaceRaced();
    await this.audit.record({
      action: 'stack.revised',
      owner: stack.owner,
      target: stack.id,
      details: { revision: next },
    });
    this.logger.log({ stack_id: stack.id, revision: next }, 'stack revised');
    return { ...this.view({ ...stack, revision: next, updatedAt: now }, definition), warnings };
  }

  /**
   * 202 with the provision job of the current revision. Resources whose drift is ignored are left as
   * they are on the node; `replace` names services to replace even when their digest matches.
   */
  async deploy(caller: Caller, id: string, replace: string[] = []): Promise<JobView> {
    // A stack deployed before from this replica: the job from what that deploy read, stored only
    // if the stack still is what it was (one statement). Else, or when it changed: the stack and its
    // current definition in one read, the job and the rest in one write.
    const known = this.deployedFrom.get(id);
    if (known && known.stack.owner === caller.owner) {
      const request = await this.deployRequest(caller, known, replace);
      const job = await this.jobs.createIfStackUnchanged(
        request.input,
        known.stack.driftIgnores,
        request.options,
      );
      if (job) {
        // Most recently used last: the oldest entry goes first when the map is full.
        if (this.deployedFrom.get(id) === known) {
          this.deployedFrom.delete(id);
          this.deployedFrom.set(id, known);
        }
        return jobView(job);
      }
      if (this.deployedFrom.get(id) === known) this.forgetDeploy(id);
    }
    const found = isUuid(id) ? await this.repository.findInOwnerWithDefinition(caller.owner, id) : null;
    if (!found) throw stackNotFound(id);
    const { stack, definition } = found;
    if (stack.status === 'destroying') throw stackBeingDestroyed(id);
    if (!definition) throw stackNotFound(stack.id);
    await this.refuseWithoutVolumeHome(stack);
    const payload = provisionPayload(definition, stack.revision);
    const read: DeployedFrom = { stack, definition, payload, bytes: 0 };
    const request = await this.deployRequest(caller, read, replace);
    const job = await this.jobs.create(request.input, request.options);
    // Not a monitoring stack with files: its deploy reads and may create clients every time.
    if (!definition.services.some((s) => s.files?.length)) {
      read.bytes = JSON.stringify(definition).length + JSON.stringify(payload).length;
      this.rememberDeploy(stack.id, read);
    }
    return jobView(job);
  }

  /**
   * Keeps what a deploy read for the stack's next deploy, within DEPLOYED_FROM_ENTRIES entries and
   * DEPLOYED_FROM_BYTES in all (the least recently deployed go first); a stack bigger than
   * DEPLOYED_FROM_ENTRY_BYTES is read at every deploy instead.
   */
  private rememberDeploy(stackId: string, read: DeployedFrom): void {
    this.forgetDeploy(stackId);
    if (read.bytes > DEPLOYED_FROM_ENTRY_BYTES) return;
    for (const oldest of this.deployedFrom.keys()) {
      if (
        this.deployedFrom.size < DEPLOYED_FROM_ENTRIES &&
        this.deployedFromBytes + read.bytes <= DEPLOYED_FROM_BYTES
      )
        break;
      this.forgetDeploy(oldest);
    }
    this.deployedFrom.set(stackId, read);
    this.deployedFromBytes += read.bytes;
  }

  private forgetDeploy(stackId: string): void {
    const known = this.deployedFrom.get(stackId);
    if (!known) return;
    this.deployedFrom.delete(stackId);
    this.deployedFromBytes -= known.bytes;
  }

  /**
   * A stack that ran with volumes stays on the worker that holds them: when that worker was deleted
   * (the stack lost its worker, ON DELETE SET NULL), a deploy would start it empty elsewhere, so it
   * is refused, saying why (docs/compose.md, "Volumes").
   */
  private async refuseWithoutVolumeHome(stack: StackEntity): Promise<void> {
    if (stack.workerId !== null || stack.deployedRevision === null) return;
    const deployed = (await this.repository.revision(stack.id, stack.deployedRevision))?.definition;
    const holding = (deployed?.services ?? []).filter((s) =>
      (s.volumes ?? []).some((v) => v.type === 'volume'),
    );
    if (holding.length === 0) return;
    throw stackVolumesLost(
      stack.id,
      holding.map((s) => s.name),
    );
  }

  /** The deploy's job, its stack's status and its audit row, made from the stack as read. */
  private async deployRequest(
    caller: Caller,
    { stack, definition, payload: base }: DeployedFrom,
    replace: string[],
  ): Promise<{ input: NewJob; options: { stackStatus: StackStatus; audit: AuditInput } }> {
    // The revision's payload is the same for every deploy of it: this job's own copy of its top
    // levels gets the deploy's parts (nothing changes the services it shares).
    const payload: JobPayload = { ...base, command: { ...base.command } };
    const renewed = await this.withMonitoring(stack, definition, payload);
    payload.command.keep = stack.driftIgnores;
    payload.command.replace = [...new Set([...replace, ...renewed])].filter(
      (name) => !stack.driftIgnores.includes(name),
    );
    const jobId = randomUUID();
    const input: NewJob = {
      id: jobId,
      owner: stack.owner,
      type: 'provision',
      stackId: stack.id,
      stackName: stack.name,
      revision: stack.revision,
      workerId: stack.workerId,
      payload,
      createdBy: caller.clientId,
    };
    const options: { stackStatus: StackStatus; audit: AuditInput } = {
      stackStatus: 'deploying',
      audit: {
        action: 'stack.deploy_requested',
        owner: stack.owner,
        target: stack.id,
        details: { job_id: jobId, revision: stack.revision },
      },
    };
    return { input, options };
  }

  /**
   * The monitoring stack's deploy-time part (docs/stack-definitions.md, "Monitoring"): the generated
   * files get PUBLIC_URL, the stack id and the stack's own clients, whose secrets go sealed; the
   * agent learns where to push the containers' output. Returns the services to replace because a
   * client was made anew (the running container holds a secret that no longer works).
   */
  private async withMonitoring(
    stack: StackEntity,
    definition: StackDefinition,
    payload: JobPayload,
  ): Promise<string[]> {
    const push = logPushUrl(getCatalog(), definition.services);
    if (push !== null) payload.command.log_push_url = push;
    if (!definition.services.some((s) => s.files?.length)) return [];
    const clients = await this.monitoringClients.ensure(stack, credentialRoles(definition.services));
    const specs = deploySpecs(
      definition.services,
      { stackId: stack.id, orchestratorUrl: this.config.publicUrl, clients },
      (plaintext, context) => this.box.encrypt(plaintext, context),
    );
    payload.command.services = specs.services;
    payload.secrets = specs.secrets;
    const created = new Set([...clients].filter(([, c]) => c.created).map(([role]) => role));
    return definition.services
      .filter((s) => s.files?.some((f) => f.credential !== null && created.has(f.credential)))
      .map((s) => s.name);
  }

  /** 202 with the destroy job; the stack is gone when it succeeds. */
  /**
   * The destroy job. The stack's volumes stay on its worker (as `docker compose down` without -v)
   * unless `query.volumes` is `delete`.
   */
  async delete(caller: Caller, id: string, query: Record<string, unknown> = {}): Promise<JobView> {
    for (const key of Object.keys(query)) {
      if (key !== 'volumes' || query.volumes !== 'delete') {
        const message =
          key === 'volumes'
            ? 'volumes is delete (or absent: kept)'
            : `${key} is not a parameter of this operation`;
        throw new ValidationFailedError(
          [{ path: `query.${key}`, message, category: 'invalid_value' }],
          message,
        );
      }
    }
    const deleteVolumes = query.volumes === 'delete';
    const stack = await this.owned(caller, id);
    const placed = stack.workerId !== null;
    const job = await this.jobs.create(
      {
        owner: stack.owner,
        type: 'destroy',
        stackId: stack.id,
        stackName: stack.name,
        revision: stack.revision,
        workerId: stack.workerId,
        payload: destroyPayload(stack.name, stack.revision, deleteVolumes),
        createdBy: caller.clientId,
      },
      { noWorkerNeeded: !placed },
    );
    if (placed) await this.repository.setStatusWhileActive(stack.id, 'destroying', job.id);
    await this.audit.record({
      action: 'stack.destroy_requested',
      owner: stack.owner,
      target: stack.id,
      details: { job_id: job.id, ...(deleteVolumes ? { volumes: 'delete' } : {}) },
    });
    return jobView(job);
  }

  // ---- health ----

  async health(caller: Caller, id: string): Promise<StackHealthView> {
    const stack = await this.owned(caller, id);
    const revision = stack.deployedRevision ?? stack.revision;
    const definition = (await this.repository.revision(stack.id, revision))?.definition;
    const report = stack.workerId ? this.reports.reportOf(stack.workerId) : undefined;
    const now = new Date();
    const all = definition?.services ?? [];
    const completed = new Set<string>();
    const services = all.map((s) => {
      const state = report?.services.find((r) => r.stack_id === stack.id && r.name === s.name);
      if (completedOneShot(s, all, state)) completed.add(s.name);
      // A service the agent should run (it holds the stack) but does not report is missing.
      const knows = report?.stackIds.has(stack.id) ? true : null;
      return serviceHealth(s.name, s.health_check !== null, state, knows, now);
    });
    // A one-shot that completed is stopped as it should be: it does not degrade the stack.
    const counted = services.filter((s) => !completed.has(s.name));
    return {
      stack_id: stack.id,
      overall: counted.length === 0 && services.length > 0 ? 'healthy' : overallHealth(counted),
      services,
      worker_id: stack.workerId,
      reported_at: report?.at.toISOString() ?? null,
    };
  }

  // ---- job hooks (StackJobHooks) ----

  reservations(workerIds: string[], manager: EntityManager) {
    return this.repository.reservations(workerIds, manager);
  }

  async placed(jobs: JobEntity[]): Promise<void> {
    const rows = jobs
      .filter((job) => job.type === 'provision' && job.workerId)
      .map((job) => ({
        stackId: job.stackId,
        workerId: job.workerId!,
        cpu: job.payload.placement.cpu,
        memory: job.payload.placement.memory_bytes,
      }));
    await this.repository.place(rows);
    // The next deploy's snapshot follows (the statement still checks the worker).
    for (const row of rows) {
      const known = this.deployedFrom.get(row.stackId);
      if (known) known.stack = Object.assign(new StackEntity(), known.stack, { workerId: row.workerId });
    }
  }

  /** What drift compares against: the last job the node finished (StateReport.last_jobs). */
  async reachedNode(job: JobEntity): Promise<void> {
    await this.repository.update(job.stackId, { lastJobId: job.id });
  }

  /**
   * Before the transaction in which destroy jobs succeed: what must go before their stacks' rows do,
   * whose deletion takes the links along (the published services, unpublished with their audit
   * rows; the monitoring clients, deleted with their tokens). Should the transaction then not move
   * a job (it moved meanwhile), its stack stays with neither: the next deploy makes both again.
   */
  async destroySucceeding(jobs: JobEntity[]): Promise<void> {
    for (const job of jobs) {
      const stack = await this.repository.findById(job.stackId);
      if (!stack) continue;
      await this.publishing.destroyed(job, stack);
      await this.monitoringClients.removeAll(stack);
    }
  }

  /** After the commit that deleted destroyed stacks: the gauge, an audit row and a log record each. */
  private async destroyed(jobs: { job: JobEntity; owner: string }[]): Promise<void> {
    if (jobs.length === 0) return;
    await this.refreshGauge();
    for (const { job, owner } of jobs) {
      await this.audit.record({
        action: 'stack.destroyed',
        owner,
        target: job.stackId,
        details: { job_id: job.id },
      });
      this.logger.log({ stack_id: job.stackId, job_id: job.id }, 'stack destroyed');
    }
  }

  /**
   * A job's stack on its own, after the commit: a second job of a stack already written in the same
   * batch (a destroy that succeeded deleted its stack in the transaction, with the stack's first job).
   */
  private async finished(job: JobEntity, reachedNode: boolean): Promise<void> {
    const stack = await this.repository.findById(job.stackId);
    if (!stack) return;
    const lastJob = reachedNode ? { lastJobId: job.id } : {};
    if (job.type === 'destroy') {
      if (job.status === 'succeeded') {
        await this.destroySucceeding([job]);
        const deleted = await this.repository.deleteMany([stack.id]);
        await this.destroyed(deleted.map((d) => ({ job, owner: d.owner })));
      } else await this.repository.update(stack.id, { status: 'failed', ...lastJob });
      return;
    }
    if (job.status === 'succeeded') {
      await this.repository.update(stack.id, {
        status: 'deployed',
        deployedRevision: job.revision,
        ...lastJob,
      });
      await this.publishing.finishedMany([{ job, stack }]);
    } else {
      await this.repository.update(stack.id, { status: 'failed', ...lastJob });
    }
  }

  /**
   * The stacks of jobs that ended (a batch of jobs of different stacks, or one job), one statement
   * inside the transaction that moved the jobs: a provision's stack `deployed` or `failed`, a failed
   * or cancelled destroy's stack `failed` (each stack once: a second job of the same stack takes the
   * single path after the commit). A destroy that succeeded deletes its stack in the same
   * transaction (one statement for the batch), so no reader sees the job succeeded and the stack
   * still there; {@link destroySucceeding} ran before it.
   */
  async finishingMany(
    jobs: JobEntity[],
    reachedNode: boolean,
    manager: EntityManager,
  ): Promise<FinishedStacks> {
    const stacks = new Set<string>();
    const batch = jobs.filter(
      (job) =>
        (job.type === 'provision' || job.status !== 'succeeded') &&
        !stacks.has(job.stackId) &&
        stacks.add(job.stackId),
    );
    const previous = await this.repository.finishStacks(
      batch.map((job) => ({
        stackId: job.stackId,
        jobId: job.id,
        succeeded: job.status === 'succeeded',
        revision: job.revision,
      })),
      reachedNode,
      manager,
    );
    const ending = jobs.filter(
      (job) =>
        job.type === 'destroy' &&
        job.status === 'succeeded' &&
        !stacks.has(job.stackId) &&
        stacks.add(job.stackId),
    );
    const owners = new Map(
      (
        await this.repository.deleteMany(
          ending.map((job) => job.stackId),
          manager,
        )
      ).map((d) => [d.id, d.owner]),
    );
    const destroyed = ending.flatMap((job) => {
      const owner = owners.get(job.stackId);
      return owner === undefined ? [] : [{ job, owner }];
    });
    return { batch, previous, destroyed };
  }

  /** After the commit: publishing for the stacks written, and the single path for the rest. */
  async finishedMany(jobs: JobEntity[], reachedNode: boolean, written: unknown): Promise<void> {
    // What finishingMany answered in the same batch's transaction (JobLifecycle passes it on).
    const { batch, previous, destroyed } = written as FinishedStacks;
    await this.publishing.finishedMany(
      batch.flatMap((job) => {
        const stack = previous.get(job.stackId);
        return stack ? [{ job, stack }] : [];
      }),
    );
    await this.destroyed(destroyed);
    const batched = new Set([...batch, ...destroyed.map((d) => d.job)]);
    for (const job of jobs) if (!batched.has(job)) await this.finished(job, reachedNode);
  }

  // ---- lookups (drift reads them too, through stacks-for-drift.ts) ----

  /** The caller's stack, or 404 (another owner's stack is not found either). */
  async owned(caller: Caller, id: string): Promise<StackEntity> {
    const stack = isUuid(id) ? await this.repository.findInOwner(caller.owner, id) : null;
    if (!stack) throw stackNotFound(id);
    return stack;
  }

  /** A stack by id whatever its owner (for what agents send about it), or null. */
  async find(id: string): Promise<StackEntity | null> {
    return isUuid(id) ? this.repository.findById(id) : null;
  }

  /** The definition of one revision (revisions never change, so they are cached). */
  async definitionAt(stackId: string, revision: number): Promise<StackDefinition | undefined> {
    const key = `${stackId}/${revision}`;
    const cached = this.definitionCache.get(key);
    if (cached) return cached;
    const row = await this.repository.revision(stackId, revision);
    if (!row) return undefined;
    if (this.definitionCache.size >= 1000)
      this.definitionCache.delete(this.definitionCache.keys().next().value!);
    this.definitionCache.set(key, row.definition);
    return row.definition;
  }

  // ---- helpers ----

  /**
   * Counts stacks into the gauge. Only the latest of overlapping counts is kept: the timer's count,
   * read before a deletion committed, could otherwise land after the deleting request's own.
   */
  private async refreshGauge(): Promise<void> {
    const read = ++this.gaugeReads;
    const count = await this.repository.count();
    if (read === this.gaugeReads) this.stacksGauge.set(count);
  }

  private async definitionOf(stack: StackEntity): Promise<StackDefinition> {
    const row = await this.repository.revision(stack.id, stack.revision);
    if (!row) throw stackNotFound(stack.id);
    return row.definition;
  }

  private revisionOf(
    stackId: string,
    revision: number,
    request: DefinitionRequest,
    definition: StackDefinition,
    createdBy: string,
    at: Date,
  ): StackRevisionEntity {
    const { variables, profiles, name, stackkit, variant } = request.options;
    const format = definition.format ?? 'stack';
    const reading =
      format === 'stack'
        ? null
        : {
            format,
            ...(name !== undefined ? { name } : {}),
            ...(stackkit !== undefined ? { stackkit } : {}),
            ...(variant !== undefined ? { variant } : {}),
            ...(profiles !== undefined && profiles.length > 0 ? { profiles: [...profiles] } : {}),
          };
    const given = variables !== undefined && Object.keys(variables).length > 0;
    return Object.assign(new StackRevisionEntity(), {
      stackId,
      revision,
      source: request.source,
      definition,
      reading,
      variablesSealed: given
        ? this.box.encrypt(JSON.stringify(variables), variablesContext(stackId, revision))
        : null,
      createdAt: at,
      createdBy,
    });
  }

  /** The names of a revision's sealed variables (the values never leave the service). */
  private variableNames(row: StackRevisionEntity): string[] {
    if (row.variablesSealed === null) return [];
    const variables = JSON.parse(
      this.box.decrypt(row.variablesSealed, variablesContext(row.stackId, row.revision)),
    ) as Record<string, string>;
    return Object.keys(variables).sort();
  }

  private view(stack: StackEntity, definition: StackDefinition): StackView {
    return {
      id: stack.id,
      name: stack.name,
      status: stack.status,
      stackkit: definition.stackkit,
      variant: definition.variant,
      revision: stack.revision,
      deployed_revision: stack.deployedRevision,
      worker_id: stack.workerId,
      services: definition.services.map((s) => s.name),
      created_at: stack.createdAt.toISOString(),
      updated_at: stack.updatedAt.toISOString(),
      format: definition.format ?? 'stack',
    };
  }
}

/** The SecretBox context of a revision's variables: a ciphertext cannot move to another revision. */
const variablesContext = (stackId: string, revision: number): string =>
  `stack-revision-variables:${stackId}:${revision}`;
