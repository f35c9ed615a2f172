import type { Logger } from 'pino';
import {
  agentMessageBytes,
  type AgentMessage,
  type CancelJobMsg,
  type JobCommandMsg,
  type JobEventMsg,
  type ServiceSpecMsg,
  type ServiceStateMsg,
  type StateReportMsg,
} from '../contracts/agent-protocol/index.js';
import { MAX_JOB_ERROR_CHARS, MAX_STATE_REPORT_BYTES } from '../contracts/agent-protocol/limits.js';
import { DesiredStateStore, type StackRecord } from './desired-state.js';
import type { ApplyContext, Driver, ServiceResult, StackRef } from './drivers/driver.js';
import { VolumesNotRemovedError, destroyStack, reconcile } from './drivers/reconcile.js';
import { HealthChecker, startConditionHooks } from './health-checker.js';
import { JobOutput } from './job-output.js';
import type { LogShipper } from './log-shipper.js';
import { MetricsScraper } from './metrics-scraper.js';
import { ServiceOutput } from './service-output.js';
import { checksOf, resolveServices, scrapeTargetsOf } from './service-specs.js';
import { fitStateReport, withReferences } from './state-report.js';

/** Final events are kept (and re-sent after a reconnect) this long, in case one was lost. */
const KEEP_FINAL_MS = 10 * 60_000;
/** At most this many final events are kept (the hello lists them). */
const MAX_FINALS = 1000;

interface ActiveJob {
  id: string;
  stackId: string;
  abort: AbortController;
  cleanup: boolean;
  timedOut: boolean;
}

/** What a job's work came to, before cancellation and timeouts are taken into account. */
interface Outcome {
  results: ServiceResult[];
  error: string;
}

type Send = (message: AgentMessage) => boolean;

/**
 * The agent's side of jobs: runs each job through the driver (jobs of one stack one after another),
 * streams its output and progress, reports the outcome, and keeps the desired state on disk. Also
 * builds the state reports (what runs, its health) sent with each heartbeat.
 */
export class JobRunner {
  private readonly store: DesiredStateStore;
  private readonly health: HealthChecker;
  private readonly scraper: MetricsScraper;
  private readonly active = new Map<string, ActiveJob>();
  private readonly finals = new Map<string, { event: JobEventMsg; at: number }>();
  private readonly stackQueues = new Map<string, Promise<void>>();
  private send: Send = () => false;
  private runningCount = 0;
  /** The last job finished per stack; state reports carry it (see StateReport.last_jobs). */
  private readonly lastJobs = new Map<string, string>();
  private lastReportEmpty = true;
  /** How the last report was fitted into its budget (see fitStateReport), to log changes only. */
  private lastFit = '0/';

  constructor(
    private readonly driver: Driver,
    dataDir: string,
    private readonly log: Logger,
    /** The agent's environment, read by its main: where `${NAME}` values come from. */
    private readonly env: Readonly<Record<string, string | undefined>>,
    /** The services' output on its way to the service (the driver writes into it). */
    private readonly output: ServiceOutput = new ServiceOutput(),
    /** Ships containers' output to a stack's log store (docker driver); none for processes. */
    private readonly shipper?: LogShipper,
  ) {
    this.store = new DesiredStateStore(dataDir);
    const exec = driver.exec?.bind(driver);
    this.health = new HealthChecker(
      exec &&
        ((stackId, name, argv, timeoutMs) =>
          exec(this.store.get(stackId)?.stack ?? { id: stackId, name: '' }, name, argv, timeoutMs)),
    );
    this.scraper = new MetricsScraper(
      (message) => this.send(message),
      (fields, msg) => log.warn(fields, msg),
    );
    for (const record of this.store.all())
      if (record.lastJobId) this.lastJobs.set(record.stack.id, record.lastJobId);
  }

  /** Brings back what the node ran before the agent restarted. */
  async restore(): Promise<void> {
    for (const record of this.store.all()) {
      const services = record.applied ?? record.desired;
      await this.onStack(record.stack.id, async () => {
        try {
          const specs = resolveServices(services, this.env);
          await reconcile(this.driver, record.stack, specs, quietContext(record.keep));
          this.watch(record.stack.id, services);
          this.shipper?.set(record.stack, record.logPushUrl ?? null);
          this.log.info({ stack_id: record.stack.id, services: services.length }, 'stack restored');
        } catch (err) {
          this.log.warn(
            { stack_id: record.stack.id, err: (err as Error).message },
            'restoring a stack failed',
          );
        }
      });
    }
  }

  /** The stream to send on; a new stream gets the final events that may not have arrived. */
  attach(send: Send): void {
    this.send = send;
    this.output.attach(send);
    const now = Date.now();
    this.pruneFinals();
    for (const { event, at } of this.finals.values())
      if (now - at <= KEEP_FINAL_MS) send({ job_event: event });
  }

  detach(): void {
    this.send = () => false;
    this.output.detach();
  }

  /** Jobs the service must not dispatch again: running, or finished with a result to re-send. */
  activeJobIds(): string[] {
    this.pruneFinals();
    return [...new Set([...this.active.keys(), ...this.finals.keys()])];
  }

  get servicesRunning(): number {
    return this.runningCount;
  }

  handle(command: JobCommandMsg): void {
    const final = this.finals.get(command.job_id);
    if (final) {
      this.send({ job_event: final.event });
      return;
    }
    if (this.active.has(command.job_id)) {
      this.event({ job_id: command.job_id, phase: 'accepted' });
      return;
    }
    const job: ActiveJob = {
      id: command.job_id,
      stackId: command.stack_id,
      abort: new AbortController(),
      cleanup: false,
      timedOut: false,
    };
    this.active.set(job.id, job);
    this.event({ job_id: job.id, phase: 'accepted' });
    void this.onStack(command.stack_id, () => this.run(job, command));
  }

  cancel(message: CancelJobMsg): void {
    const job = this.active.get(message.job_id);
    if (job) {
      job.cleanup ||= message.cleanup;
      job.abort.abort(new Error(message.cleanup ? 'cleaned up' : 'cancelled'));
      return;
    }
    const final = this.finals.get(message.job_id);
    if (message.cleanup && final) {
      const stackId = this.stackOfFinal.get(message.job_id);
      if (stackId) void this.onStack(stackId, () => this.revert(stackId, message.job_id));
      return;
    }
    if (final) this.send({ job_event: final.event });
  }

  /** What runs on this node now, with health, for the service's stack health and drift. */
  async report(): Promise<StateReportMsg | null> {
    // Taken before looking: what is observed is at least as new as these jobs' results.
    const lastJobs = Object.fromEntries(this.lastJobs);
    const observed = await this.driver.observe();
    this.runningCount = observed.filter((o) => o.running).length;
    const desired = new Map<string, Set<string>>();
    for (const record of this.store.all())
      desired.set(record.stack.id, new Set(record.desired.map((s) => s.name)));
    const wanted = (stackId: string, name: string) =>
      this.store.get(stackId)?.desired.find((s) => s.name === name);
    const services: ServiceStateMsg[] = observed.map((o) =>
      withReferences(
        {
          stack_id: o.stackId,
          name: o.name,
          status: o.status,
          running: o.running,
          started_at: o.startedAt?.toISOString() ?? '',
          digest: o.digest,
          restarts: o.restarts,
          exit_code: o.exitCode ?? -1,
          health: this.health.result(o.stackId, o.name),
          actual: o.actual,
          desired: desired.get(o.stackId)?.has(o.name) ?? false,
        },
        wanted(o.stackId, o.name),
      ),
    );
    const empty = services.length === 0 && desired.size === 0;
    if (empty && this.lastReportEmpty) return null;
    this.lastReportEmpty = empty;
    const fitted = fitStateReport(
      { services, stack_ids: [...desired.keys()], last_jobs: lastJobs },
      MAX_STATE_REPORT_BYTES,
      (report) => agentMessageBytes({ state: report }),
      wanted,
    );
    // Said once per change, not with every heartbeat.
    const fit = `${fitted.trimmed}/${fitted.dropped.join(',')}`;
    if (fit !== this.lastFit) {
      this.lastFit = fit;
      if (fitted.dropped.length > 0)
        this.log.warn(
          { trimmed: fitted.trimmed, dropped_stacks: fitted.dropped, budget_bytes: MAX_STATE_REPORT_BYTES },
          'state report over its budget even with digests; stacks left out are unknown to the service',
        );
      else if (fitted.trimmed > 0)
        this.log.info(
          { trimmed: fitted.trimmed, budget_bytes: MAX_STATE_REPORT_BYTES },
          'state report over its budget; the largest services are reported with digests',
        );
    }
    return fitted.report;
  }

  async close(): Promise<void> {
    for (const job of this.active.values()) job.abort.abort(new Error('agent stopping'));
    this.health.close();
    this.scraper.close();
    await this.shipper?.close();
    await this.driver.close();
    this.output.close();
  }

  // ---- running a job ----

  private readonly stackOfFinal = new Map<string, string>();

  private async run(job: ActiveJob, command: JobCommandMsg): Promise<void> {
    const stack: StackRef = {
      id: command.stack_id,
      name: command.stack_name,
      ...(/^[0-9a-f]{12}$/.test(command.volume_scope ?? '') ? { volumeScope: command.volume_scope } : {}),
    };
    const output = new JobOutput(job.id, (event) => this.event(event));
    const timeoutMs = Math.max(1000, command.timeout_ms || 600_000);
    const timeout = setTimeout(() => {
      job.timedOut = true;
      job.abort.abort(new Error(`timed out after ${command.timeout_ms} ms`));
    }, timeoutMs);
    this.log.info(
      { job_id: job.id, job_type: command.type, stack_id: stack.id, attempt: command.attempt },
      'job started',
    );
    let outcome: Outcome = { results: [], error: '' };
    try {
      const ctx = output.context(job.abort.signal);
      if (command.type === 'destroy')
        outcome = await this.destroy(stack, { ...ctx, deleteVolumes: command.delete_volumes === true });
      else if (command.type === 'provision') outcome = await this.provision(stack, command, ctx);
      else outcome.error = `unknown job type ${command.type}`;
    } catch (err) {
      outcome.error = (err as Error).message;
    } finally {
      clearTimeout(timeout);
    }
    output.flush();
    await this.finish(job, command, stack, outcome);
  }

  private async destroy(stack: StackRef, ctx: ApplyContext): Promise<Outcome> {
    ctx.log(`destroying stack ${stack.name}${ctx.deleteVolumes ? ' and its volumes' : ''}`);
    let results: ServiceResult[];
    let error = '';
    try {
      results = await destroyStack(this.driver, stack, ctx);
    } catch (err) {
      // The services are gone, so the stack is forgotten here; the job fails for its volumes.
      if (!(err instanceof VolumesNotRemovedError)) throw err;
      results = err.results;
      error = err.message;
    }
    this.unwatch(stack.id);
    if (!ctx.signal.aborted) this.shipper?.set(stack, null);
    if (!ctx.signal.aborted) this.store.delete(stack.id);
    return { results, error };
  }

  private async provision(stack: StackRef, command: JobCommandMsg, ctx: ApplyContext): Promise<Outcome> {
    const previous = this.store.get(stack.id);
    const target = {
      stack,
      revision: command.revision,
      desired: command.services,
      logPushUrl: command.log_push_url || undefined,
    };
    this.store.save({ ...previous, ...target, applied: previous?.applied ?? null, keep: command.keep ?? [] });
    const specs = resolveServices(command.services, this.env);
    ctx.log(`applying revision ${command.revision} of ${stack.name}: ${command.services.length} services`);
    ctx.keep = new Set(command.keep ?? []);
    ctx.replace = new Set(command.replace ?? []);
    if (ctx.keep.size > 0) ctx.log(`leaving ${[...ctx.keep].join(', ')} as they are (drift ignored)`);
    const started = new Set<string>();
    ctx.conditions = startConditionHooks(this.health, stack.id, checksOf(command.services), started);
    const results = await reconcile(this.driver, stack, specs, ctx);
    // Those the reconcile ensured had their checks (re)started as it went.
    const touched = results
      .filter((r) => r.action !== 'unchanged' && !started.has(r.name))
      .map((r) => r.name);
    this.health.reset(stack.id, touched);
    this.watch(stack.id, command.services);
    this.shipper?.set(stack, target.logPushUrl ?? null);
    const error = results
      .filter((r) => !r.ok)
      .map((r) => `${r.name}: ${r.error}`)
      .join('; ');
    if (!error) await this.waitHealthy(stack.id, command.services, ctx);
    if (!error && !ctx.signal.aborted)
      this.store.save({ ...this.store.get(stack.id), ...target, applied: command.services });
    return { results, error };
  }

  /** Sends the job's final event (kept for re-sending), then reverts a cleaned-up job's stack. */
  private async finish(job: ActiveJob, command: JobCommandMsg, stack: StackRef, outcome: Outcome) {
    const aborted = job.abort.signal.aborted;
    // Cancelled only when someone asked; a timeout or a cleanup is a failure.
    const phase = aborted
      ? job.cleanup || job.timedOut
        ? 'failed'
        : 'cancelled'
      : outcome.error
        ? 'failed'
        : 'succeeded';
    const error = aborted
      ? String((job.abort.signal.reason as Error | undefined)?.message ?? 'cancelled')
      : outcome.error;
    // Driver errors can quote what the runtime said at any length; the service keeps this much.
    const final: JobEventMsg = {
      job_id: job.id,
      phase,
      progress: phase === 'succeeded' ? 100 : 0,
      lines: [],
      error: error.slice(0, MAX_JOB_ERROR_CHARS),
      results: outcome.results.map((r) => ({ ...r, error: r.error.slice(0, MAX_JOB_ERROR_CHARS) })),
    };
    this.active.delete(job.id);
    this.finals.set(job.id, { event: final, at: Date.now() });
    this.stackOfFinal.set(job.id, stack.id);
    this.pruneFinals();
    this.send({ job_event: final });
    this.log.info(
      { job_id: job.id, job_type: command.type, stack_id: stack.id, phase, error },
      'job finished',
    );
    if (job.cleanup) await this.revert(stack.id, job.id);
    // Only now do reports name this job: one taken during a cleanup's revert says nothing yet.
    const record = this.store.get(stack.id);
    if (record) {
      this.lastJobs.set(stack.id, job.id);
      this.store.save({ ...record, lastJobId: job.id });
    } else this.lastJobs.delete(stack.id);
  }

  /** Final events older than KEEP_FINAL_MS, and any beyond the newest MAX_FINALS, are forgotten. */
  private pruneFinals(): void {
    const now = Date.now();
    for (const [id, { at }] of this.finals) {
      if (now - at <= KEEP_FINAL_MS && this.finals.size <= MAX_FINALS) break;
      this.finals.delete(id);
      this.stackOfFinal.delete(id);
    }
  }

  /**
   * A provision succeeds when its services answer: each service with a health check must pass it
   * once (like `compose up --wait`). Waits until the job is cancelled or times out otherwise.
   */
  private async waitHealthy(stackId: string, services: ServiceSpecMsg[], ctx: ApplyContext): Promise<void> {
    const pending = new Set(checksOf(services).keys());
    if (pending.size === 0) return;
    ctx.log(`waiting for ${[...pending].join(', ')} to pass their health checks`);
    while (pending.size > 0 && !ctx.signal.aborted) {
      for (const name of [...pending]) {
        const result = this.health.result(stackId, name);
        if (result?.ok) {
          pending.delete(name);
          const how = result.status_code > 0 ? `HTTP ${result.status_code}` : result.url;
          ctx.log(`${name}: healthy (${how} in ${result.latency_ms} ms)`);
        }
      }
      if (pending.size > 0) await abortableSleep(200, ctx.signal);
    }
    if (pending.size > 0) ctx.log(`${[...pending].join(', ')}: never passed the health check`);
  }

  /** Cleanup: the stack on this node goes back to what the last successful job applied. */
  private async revert(stackId: string, jobId: string): Promise<void> {
    const record = this.store.get(stackId);
    const ctx = quietContext(record?.keep);
    try {
      if (!record?.applied) {
        if (record) await destroyStack(this.driver, record.stack, ctx);
        this.unwatch(stackId);
        this.store.delete(stackId);
      } else {
        await reconcile(this.driver, record.stack, resolveServices(record.applied, this.env), ctx);
        this.store.save({ ...record, desired: record.applied });
        this.watch(stackId, record.applied);
      }
      this.send({
        job_event: { job_id: jobId, phase: 'cleaned', progress: 0, lines: [], error: '', results: [] },
      });
      this.log.info({ job_id: jobId, stack_id: stackId }, 'job cleaned up on this node');
    } catch (err) {
      this.log.warn({ job_id: jobId, stack_id: stackId, err: (err as Error).message }, 'cleanup failed');
    }
  }

  /** Health checks and scrapes for the stack's services as `services` declare them. */
  private watch(stackId: string, services: ServiceSpecMsg[]): void {
    this.health.setStack(stackId, checksOf(services));
    this.scraper.setStack(stackId, scrapeTargetsOf(services));
  }

  /** The stack left this node: no more checks, scrapes or output budget for it. */
  private unwatch(stackId: string): void {
    this.health.removeStack(stackId);
    this.scraper.removeStack(stackId);
    this.output.forget(stackId);
  }

  private onStack(stackId: string, work: () => Promise<void>): Promise<void> {
    const previous = this.stackQueues.get(stackId) ?? Promise.resolve();
    const next = previous.then(work, work).catch((err: unknown) => {
      this.log.warn({ stack_id: stackId, err: (err as Error).message }, 'stack work failed');
    });
    this.stackQueues.set(stackId, next);
    void next.then(() => {
      if (this.stackQueues.get(stackId) === next) this.stackQueues.delete(stackId);
    });
    return next;
  }

  private event(partial: Partial<JobEventMsg> & { job_id: string; phase: string }): void {
    this.send({
      job_event: { progress: 0, lines: [], error: '', results: [], ...partial },
    });
  }
}

function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

function quietContext(keep: string[] = []): ApplyContext {
  return { signal: new AbortController().signal, log: () => undefined, keep: new Set(keep) };
}

export type { StackRecord };
