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
} from '../agent-protocol/index.js';
import {
  MAX_JOB_ERROR_CHARS,
  MAX_JOB_LINE_CHARS,
  MAX_JOB_LINES_BYTES,
  MAX_JOB_LINES_PER_EVENT,
  MAX_STATE_REPORT_BYTES,
  utf8Bytes,
} from '../agent-protocol/limits.js';
import { DesiredStateStore, type StackRecord } from './desired-state.js';
import type {
  ApplyContext,
  Driver,
  HealthCheckSpec,
  ServiceResult,
  ServiceSpec,
  StackRef,
} from './drivers/driver.js';
import { HealthChecker } from './health-checker.js';
import { fitStateReport } from './state-report.js';

/** Final events are kept (and re-sent after a reconnect) this long, in case one was lost. */
const KEEP_FINAL_MS = 10 * 60_000;
/** At most this many final events are kept (the hello lists them). */
const MAX_FINALS = 1000;
/** Output lines are sent in batches at most this often. */
const LINE_FLUSH_MS = 100;
const ENV_REFERENCE = /^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$/;

interface ActiveJob {
  id: string;
  stackId: string;
  abort: AbortController;
  cleanup: boolean;
}

type Send = (message: AgentMessage) => boolean;

/**
 * The agent's side of jobs: runs each job through the driver (jobs of one stack one after another),
 * streams its output and progress, reports the outcome, and keeps the desired state on disk. Also
 * builds the state reports (what runs, its health) sent with each heartbeat.
 */
export class JobRunner {
  private readonly store: DesiredStateStore;
  private readonly health = new HealthChecker();
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
  ) {
    this.store = new DesiredStateStore(dataDir);
    for (const record of this.store.all())
      if (record.lastJobId) this.lastJobs.set(record.stack.id, record.lastJobId);
  }

  /** Brings back what the node ran before the agent restarted. */
  async restore(): Promise<void> {
    for (const record of this.store.all()) {
      const services = record.applied ?? record.desired;
      await this.onStack(record.stack.id, async () => {
        try {
          const resolved = this.resolve(services);
          if ('error' in resolved) throw new Error(resolved.error);
          await this.driver.apply(record.stack, resolved.specs, quietContext(record.keep));
          this.health.setStack(record.stack.id, checksOf(services));
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
    const now = Date.now();
    this.pruneFinals();
    for (const { event, at } of this.finals.values())
      if (now - at <= KEEP_FINAL_MS) send({ job_event: event });
  }

  detach(): void {
    this.send = () => false;
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
    const services: ServiceStateMsg[] = observed.map((o) => ({
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
    }));
    const empty = services.length === 0 && desired.size === 0;
    if (empty && this.lastReportEmpty) return null;
    this.lastReportEmpty = empty;
    const fitted = fitStateReport(
      { services, stack_ids: [...desired.keys()], last_jobs: lastJobs },
      MAX_STATE_REPORT_BYTES,
      (report) => agentMessageBytes({ state: report }),
      (stackId, name) => this.store.get(stackId)?.desired.find((s) => s.name === name),
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
    await this.driver.close();
  }

  // ---- running a job ----

  private readonly stackOfFinal = new Map<string, string>();

  private async run(job: ActiveJob, command: JobCommandMsg): Promise<void> {
    const stack: StackRef = { id: command.stack_id, name: command.stack_name };
    const lines: string[] = [];
    let lineBytes = 0;
    let flushTimer: NodeJS.Timeout | undefined;
    const flushLines = () => {
      clearTimeout(flushTimer);
      flushTimer = undefined;
      lineBytes = 0;
      if (lines.length > 0) this.event({ job_id: job.id, phase: 'progress', lines: lines.splice(0) });
    };
    let timedOut = false;
    const timeout = setTimeout(
      () => {
        timedOut = true;
        job.abort.abort(new Error(`timed out after ${command.timeout_ms} ms`));
      },
      Math.max(1000, command.timeout_ms || 600_000),
    );
    const ctx: ApplyContext = {
      signal: job.abort.signal,
      log: (line) => {
        // The service keeps no more of a line than this; an event stays far below the message limit.
        const kept = line.length > MAX_JOB_LINE_CHARS ? line.slice(0, MAX_JOB_LINE_CHARS) : line;
        lines.push(kept);
        lineBytes += utf8Bytes(kept);
        if (lines.length >= MAX_JOB_LINES_PER_EVENT || lineBytes >= MAX_JOB_LINES_BYTES) flushLines();
        else flushTimer ??= setTimeout(flushLines, LINE_FLUSH_MS);
      },
      progress: (done, total) => {
        flushLines();
        this.event({
          job_id: job.id,
          phase: 'progress',
          progress: total > 0 ? Math.floor((done / total) * 100) : 100,
        });
      },
    };
    this.log.info(
      { job_id: job.id, job_type: command.type, stack_id: stack.id, attempt: command.attempt },
      'job started',
    );
    let results: ServiceResult[] = [];
    let error = '';
    try {
      if (command.type === 'destroy') {
        ctx.log(`destroying stack ${stack.name}`);
        results = await this.driver.destroy(stack, ctx);
        this.health.removeStack(stack.id);
        if (!job.abort.signal.aborted) this.store.delete(stack.id);
      } else if (command.type === 'provision') {
        const previous = this.store.get(stack.id);
        this.store.save({
          ...previous,
          stack,
          revision: command.revision,
          desired: command.services,
          applied: previous?.applied ?? null,
          keep: command.keep ?? [],
        });
        const resolved = this.resolve(command.services);
        if ('error' in resolved) throw new Error(resolved.error);
        ctx.log(
          `applying revision ${command.revision} of ${stack.name}: ${command.services.length} services`,
        );
        ctx.keep = new Set(command.keep ?? []);
        ctx.replace = new Set(command.replace ?? []);
        if (ctx.keep.size > 0) ctx.log(`leaving ${[...ctx.keep].join(', ')} as they are (drift ignored)`);
        results = await this.driver.apply(stack, resolved.specs, ctx);
        this.health.reset(
          stack.id,
          results.filter((r) => r.action !== 'unchanged').map((r) => r.name),
        );
        this.health.setStack(stack.id, checksOf(command.services));
        const failed = results.filter((r) => !r.ok);
        if (failed.length > 0) error = failed.map((r) => `${r.name}: ${r.error}`).join('; ');
        else await this.waitHealthy(stack.id, command.services, ctx);
        if (!error && !job.abort.signal.aborted) {
          this.store.save({
            ...this.store.get(stack.id),
            stack,
            revision: command.revision,
            desired: command.services,
            applied: command.services,
          });
        }
      } else error = `unknown job type ${command.type}`;
    } catch (err) {
      error = (err as Error).message;
    } finally {
      clearTimeout(timeout);
    }
    flushLines();
    const aborted = job.abort.signal.aborted;
    // Cancelled only when someone asked; a timeout or a cleanup is a failure.
    const phase = aborted
      ? job.cleanup || timedOut
        ? 'failed'
        : 'cancelled'
      : error
        ? 'failed'
        : 'succeeded';
    if (aborted) error = String((job.abort.signal.reason as Error | undefined)?.message ?? 'cancelled');
    // Driver errors can quote what the runtime said at any length; the service keeps this much.
    const final: JobEventMsg = {
      job_id: job.id,
      phase,
      progress: phase === 'succeeded' ? 100 : 0,
      lines: [],
      error: error.slice(0, MAX_JOB_ERROR_CHARS),
      results: results.map((r) => ({ ...r, error: r.error.slice(0, MAX_JOB_ERROR_CHARS) })),
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
    const pending = new Set(
      services.filter((s) => s.health_check && s.health_check.port > 0).map((s) => s.name),
    );
    if (pending.size === 0) return;
    ctx.log(`waiting for ${[...pending].join(', ')} to pass their health checks`);
    while (pending.size > 0 && !ctx.signal.aborted) {
      for (const name of [...pending]) {
        const result = this.health.result(stackId, name);
        if (result?.ok) {
          pending.delete(name);
          ctx.log(`${name}: healthy (HTTP ${result.status_code} in ${result.latency_ms} ms)`);
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
        if (record) await this.driver.destroy(record.stack, ctx);
        this.health.removeStack(stackId);
        this.store.delete(stackId);
      } else {
        const resolved = this.resolve(record.applied);
        if ('error' in resolved) throw new Error(resolved.error);
        await this.driver.apply(record.stack, resolved.specs, ctx);
        this.store.save({ ...record, desired: record.applied });
        this.health.setStack(stackId, checksOf(record.applied));
      }
      this.send({
        job_event: { job_id: jobId, phase: 'cleaned', progress: 0, lines: [], error: '', results: [] },
      });
      this.log.info({ job_id: jobId, stack_id: stackId }, 'job cleaned up on this node');
    } catch (err) {
      this.log.warn({ job_id: jobId, stack_id: stackId, err: (err as Error).message }, 'cleanup failed');
    }
  }

  /** `${NAME}` values come from the agent's environment; a missing one fails the whole job. */
  private resolve(services: ServiceSpecMsg[]): { specs: ServiceSpec[] } | { error: string } {
    const specs: ServiceSpec[] = [];
    for (const s of services) {
      const env: Record<string, string> = {};
      for (const [k, v] of Object.entries(s.env ?? {})) {
        const ref = ENV_REFERENCE.exec(v);
        if (!ref) {
          env[k] = v;
          continue;
        }
        const value = this.env[ref[1]];
        if (value === undefined)
          return { error: `${s.name}: environment variable ${ref[1]} is not set on the agent` };
        env[k] = value;
      }
      specs.push({
        name: s.name,
        image: s.image,
        command: s.command ?? [],
        env,
        ports: (s.ports ?? []).map((p) => ({
          container: p.container,
          host: p.host,
          protocol: p.protocol === 'udp' ? 'udp' : 'tcp',
        })),
        cpu: s.cpu,
        memory_bytes: s.memory_bytes,
        restart: s.restart === 'always' || s.restart === 'never' ? s.restart : 'on-failure',
        health_check: s.health_check ?? null,
        digest: s.digest,
      });
    }
    return { specs };
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

function checksOf(services: ServiceSpecMsg[]): Map<string, HealthCheckSpec> {
  const checks = new Map<string, HealthCheckSpec>();
  for (const s of services) if (s.health_check && s.health_check.port > 0) checks.set(s.name, s.health_check);
  return checks;
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
