import { Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { serverMessageBytes, type JobCommandMsg } from '../../contracts/agent-protocol/index.js';
import { MAX_AGENT_MESSAGE_BYTES } from '../../contracts/agent-protocol/limits.js';
import { AgentSessions } from '../agent-gateway/agent-sessions.js';
import { SecretBox } from '../common/secret-box.js';
import { WorkersService } from '../workers/workers.service.js';
import type { JobEntity } from './entities/job.entity.js';
import { JobLifecycle } from './job-lifecycle.js';
import { openSealedFiles } from './job-secrets.js';
import { JobsRepository } from './jobs.repository.js';
import { place, type PlacementCandidate } from './placement.js';
import { volumeScope } from '../stacks/volume-scope.js';

/** Jobs taken from the queue per dispatcher round. */
const CLAIM_BATCH = 200;
/** The dispatcher looks at the queue this often even when nothing woke it (other replicas' jobs). */
export const POLL_MS = 250;
/** Between back-to-back rounds (under load), so that each takes more than one job. */
const ROUND_GAP_MS = 5;

/**
 * The dispatcher: takes queued jobs this replica can send, places those without a worker, and sends
 * each to its agent's stream. A round runs when something may be dispatchable (a new job, a job
 * that ended or went back to the queue, a connected agent) and every POLL_MS; rounds never overlap.
 */
@Injectable()
export class JobDispatcher implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('jobs');
  private pollTimer: NodeJS.Timeout | undefined;
  private dispatching = false;
  /** A wake arrived during a round: run another one after it. */
  private roundRequested = false;
  /** The last claim with placement met jobs it had to place (or could not send): start with it. */
  private placingLikely = false;
  /** The gap before a round asked for during the previous one. */
  private gap: NodeJS.Timeout | undefined;
  /**
   * Something other than the poll timer asked for a round since the last one started (a job of
   * this replica queued or ended, an agent connected): the next round claims without asking first.
   */
  private changed = true;
  private stopped = false;

  constructor(
    private readonly repository: JobsRepository,
    private readonly sessions: AgentSessions,
    private readonly workers: WorkersService,
    private readonly lifecycle: JobLifecycle,
    private readonly box: SecretBox,
  ) {}

  onModuleInit(): void {
    this.lifecycle.onQueueChanged(() => this.wake());
    // A dispatch round on every tick, whether or not the sweep of timeouts is still going.
    this.pollTimer = setInterval(() => this.wake(true), POLL_MS);
    this.pollTimer.unref();
  }

  onModuleDestroy(): void {
    this.stopped = true;
    clearInterval(this.pollTimer);
    clearTimeout(this.gap);
  }

  /** Asks for a dispatcher round soon (a new job, a connected agent; `polled`: the timer's). */
  wake(polled = false): void {
    if (this.stopped) return;
    if (!polled) this.changed = true;
    if (this.dispatching || this.gap) {
      this.roundRequested = true;
      return;
    }
    this.startRound();
  }

  /**
   * Whether a new job can go to its agent from its own request, without the queue: its stack is
   * placed on a worker live for its owner whose stream this replica holds (what a round would
   * decide for it).
   */
  sendsAtOnce(job: { owner: string; workerId: string | null }): boolean {
    return !this.stopped && job.workerId !== null && this.workers.isLiveFor(job.owner, job.workerId);
  }

  /**
   * A job its request stored as dispatched (`sendsAtOnce`): onto its stream now. False when it could
   * not go, and was queued again or failed as a round does with such a job.
   */
  async sendNow(job: JobEntity): Promise<boolean> {
    return (await this.send([job], new Set())) === 1;
  }

  private startRound(): void {
    this.dispatching = true;
    this.roundRequested = false;
    const polled = !this.changed;
    this.changed = false;
    void this.dispatchRound(polled)
      .catch((err: unknown) => this.logger.warn({ err }, 'dispatch round failed'))
      .finally(() => {
        this.dispatching = false;
        if (!this.roundRequested || this.stopped) return;
        // Woken during the round (jobs keep coming): the next round after a short gap, so that it
        // takes the jobs of several requests at once instead of costing a transaction per job.
        this.gap = setTimeout(() => {
          this.gap = undefined;
          if (this.roundRequested && !this.stopped) this.startRound();
        }, ROUND_GAP_MS);
      });
  }

  /**
   * `polled`: only the timer asked for this round. It first asks whether any job is queued at all
   * (an index lookup) before the claim, which names every live worker: at 10,000 agents the idle
   * claims, four a second, cost the service 5 % of a core and PostgreSQL more (docs/benchmarks.md).
   */
  private async dispatchRound(polled: boolean): Promise<void> {
    if (polled && !(await this.repository.anyQueued())) {
      // Nothing to place either: the next job starts with the claim for placed stacks.
      this.placingLikely = false;
      return;
    }
    for (;;) {
      const connected = this.sessions.connectedIds();
      if (connected.length === 0) return;
      // Jobs of placed stacks whose worker is live: one statement, and they are on their streams
      // before anything else is read. Skipped while the last claim met jobs to place: the claim
      // below takes placed jobs too, and the queue is likely to hold more of those.
      let fast = 0;
      let others = this.placingLikely;
      if (!others) {
        const claimed = await this.repository.claimPlaced(
          CLAIM_BATCH,
          this.workers.liveWorkerOwners(),
          connected,
          new Date(),
        );
        await this.send(claimed.jobs, new Set());
        fast = claimed.jobs.length;
        others = claimed.others;
      }
      // The rest (jobs to place, jobs for a worker not live for their owner) in the claim's
      // transaction, only when the queue holds any.
      let slow = 0;
      if (others) {
        // Jobs that had no worker yet: their stack learns where it runs.
        const newlyPlaced = new Set<string>();
        let placing = false;
        const sent = await this.repository.claim(CLAIM_BATCH, connected, async (jobs, manager) => {
          for (const job of jobs) if (job.workerId === null) newlyPlaced.add(job.id);
          placing = jobs.some(
            (job) => job.workerId === null || !this.workers.isLiveFor(job.owner, job.workerId),
          );
          // The reservations only matter for placing a job: a job of a placed stack goes to its
          // worker. Read through the claim's own transaction (on the embedded database every
          // connection shares one backend, and another connection's query would wait for it forever).
          const reserved =
            newlyPlaced.size > 0
              ? await this.lifecycle.reservations(connected, manager)
              : new Map<string, { cpu: number; memory_bytes: number }>();
          return this.decide(jobs, reserved);
        });
        this.placingLikely = placing;
        await this.send(sent, newlyPlaced);
        slow = sent.length;
      }
      if (fast < CLAIM_BATCH && slow < CLAIM_BATCH) return;
    }
  }

  /**
   * Puts claimed jobs on their agents' streams; what cannot go is queued again or fails. Returns
   * how many went.
   */
  private async send(claimed: JobEntity[], newlyPlaced: Set<string>): Promise<number> {
    if (claimed.length === 0) return 0;
    const unsent: JobEntity[] = [];
    const refused: { job: JobEntity; bytes: number }[] = [];
    const unopened: JobEntity[] = [];
    const placed: JobEntity[] = [];
    for (const job of claimed) {
      let services;
      try {
        services = openSealedFiles(
          job.stackId,
          job.payload.command.services,
          job.payload.secrets ?? [],
          (sealed, context) => this.box.decrypt(sealed, context),
        );
      } catch {
        unopened.push(job);
        continue;
      }
      const command: JobCommandMsg = {
        job_id: job.id,
        type: job.type,
        stack_id: job.stackId,
        stack_name: job.payload.command.stack_name,
        revision: job.revision,
        services,
        timeout_ms: job.timeoutMs,
        attempt: job.attempts,
        keep: job.payload.command.keep ?? [],
        replace: job.payload.command.replace ?? [],
        log_push_url: job.payload.command.log_push_url ?? '',
        delete_volumes: job.payload.command.delete_volumes ?? false,
        volume_scope: volumeScope(job.owner, job.stackName),
      };
      // Only a definition stored before the size limits can be this big; sending it would end
      // the agent's stream (and leave every stack of the node unknown), so the job fails instead.
      const message = { job: command };
      const bytes = serverMessageBytes(message);
      if (bytes > MAX_AGENT_MESSAGE_BYTES) {
        refused.push({ job, bytes });
        continue;
      }
      if (!this.sessions.send(job.workerId!, message)) {
        unsent.push(job);
        continue;
      }
      if (newlyPlaced.has(job.id)) placed.push(job);
      this.logger.log(
        { job_id: job.id, job_type: job.type, worker_id: job.workerId, attempt: job.attempts },
        'job dispatched',
      );
    }
    // Every command of the round is on its stream before anything else waits for the database.
    await this.lifecycle.placed(placed);
    for (const job of unsent) await this.lifecycle.requeue(job, 'agent not connected');
    for (const job of unopened)
      await this.lifecycle.abort(
        job,
        'a credential of the job cannot be opened (the encryption key changed since the job was made): deploy the stack again',
      );
    for (const { job, bytes } of refused)
      await this.lifecycle.abort(
        job,
        `the job's command takes ${bytes} bytes and an agent accepts at most ${MAX_AGENT_MESSAGE_BYTES}: replace the stack's definition with one within the size limits (docs/stack-definitions.md)`,
      );
    return claimed.length - unsent.length - unopened.length - refused.length;
  }

  /** Placement for a batch, counting what earlier jobs of the same batch reserve. */
  private decide(
    jobs: JobEntity[],
    reserved: Map<string, { cpu: number; memory_bytes: number }>,
  ): Map<string, { workerId: string } | { reason: string }> {
    const decisions = new Map<string, { workerId: string } | { reason: string }>();
    const byOwner = new Map<string, PlacementCandidate[]>();
    const candidatesOf = (owner: string): PlacementCandidate[] => {
      let list = byOwner.get(owner);
      if (!list) {
        list = this.workers.liveWorkers(owner).map((w) => ({
          ...w,
          reserved: { ...(reserved.get(w.id) ?? { cpu: 0, memory_bytes: 0 }) },
        }));
        byOwner.set(owner, list);
      }
      return list;
    };
    for (const job of jobs) {
      const candidates = candidatesOf(job.owner);
      if (job.type === 'destroy' || job.workerId !== null) {
        // A job for a placed stack goes to that worker and no other.
        const worker = candidates.find((w) => w.id === job.workerId);
        decisions.set(
          job.id,
          worker ? { workerId: worker.id } : { reason: `waiting for worker ${job.workerId} to connect` },
        );
        continue;
      }
      const req = { ...job.payload.placement, current: null };
      const result = place(candidates, req);
      if (result.ok) {
        decisions.set(job.id, { workerId: result.workerId });
        const chosen = candidates.find((w) => w.id === result.workerId)!;
        chosen.reserved.cpu += req.cpu;
        chosen.reserved.memory_bytes += req.memory_bytes;
      } else decisions.set(job.id, { reason: `placement: ${result.reason}` });
    }
    for (const job of jobs) {
      const decision = decisions.get(job.id);
      if (decision && 'reason' in decision)
        this.logger.debug(
          { job_id: job.id, job_type: job.type, reason: decision.reason },
          'job stays queued',
        );
    }
    return decisions;
  }
}
