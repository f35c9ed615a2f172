import { DataSource, type EntityManager } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JobLifecycle } from '../../src/server/jobs/job-lifecycle.js';
import { JobsRepository } from '../../src/server/jobs/jobs.repository.js';
import { StacksService } from '../../src/server/stacks/stacks.service.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { enrollAgent } from '../support/grpc-agent.js';
import { orchestrator } from '../support/stacks.js';

const stackYaml = (name: string) => `
name: ${name}
stackkit: basement-kit
services:
  web:
    command: ["${process.execPath}", "-e", "setInterval(() => {}, 1000)"]
    resources: { cpu: 0.1, memory: 64Mi }
`;

/**
 * The agents' results of a batch move their jobs and their stacks in one transaction
 * (JobsRepository.finishMany with StacksService.finishingMany): no reader sees a job ended and its
 * stack not yet, and a stack write that fails leaves the jobs as they were (they then take the
 * single-job path); so does a job that ends on its own (JobLifecycle.move). And the timeout sweep (JobSweeper, JobsRepository.forSweep), which acts on
 * dispatched, running and cancelling jobs only: a job back in the queue keeps its worker and its
 * last dispatch time, and waits there for its agent however long ago that dispatch was.
 */
describe('job results and their stacks commit together', () => {
  let t: TestApp;
  let api: ReturnType<typeof orchestrator>;

  beforeAll(async () => {
    t = await startTestApp();
    api = orchestrator(t);
  });
  afterAll(() => t?.close());

  /** A stack with a queued provision job: no worker exists, so it stays queued. */
  async function queuedJob(name: string): Promise<{ stackId: string; jobId: string }> {
    const created = await api.yaml('post', '/stacks', stackYaml(name));
    expect(created.status).toBe(201);
    const deploy = await api.post(`/stacks/${created.body.id as string}/deploy`);
    expect(deploy.status).toBe(202);
    return { stackId: created.body.id as string, jobId: deploy.body.id as string };
  }

  const failedPatch = () => ({
    results: [],
    error: 'failed on the worker',
    progress: 0,
    finishedAt: new Date(),
  });

  /**
   * Ends one job as an agents' write batch does (JobsRepository.finishMany with
   * StacksService.finishingMany, the node reached), running `inside` in that transaction after the
   * stack's writes.
   */
  async function finishAsBatch(
    jobId: string,
    to: 'failed' | 'succeeded',
    patch: Parameters<JobsRepository['finishMany']>[0][number]['patch'],
    inside: (manager: EntityManager) => Promise<void>,
  ) {
    const repository = t.app.get(JobsRepository);
    const job = (await repository.findById(jobId))!;
    return repository.finishMany([{ job, to, patch }], async (done, manager) => {
      const result = await t.app.get(StacksService).finishingMany(
        done.map((m) => m.job),
        true,
        manager,
      );
      await inside(manager);
      return result;
    });
  }

  it('a failing stack write rolls the jobs back', async () => {
    const { stackId, jobId } = await queuedJob('atomic-rollback');
    const repository = t.app.get(JobsRepository);
    const job = (await repository.findById(jobId))!;
    await expect(
      repository.finishMany([{ job, to: 'failed', patch: failedPatch() }], async (moved, manager) => {
        expect(moved.map((m) => m.job.id)).toEqual([jobId]);
        const [row] = await manager.query<{ status: string }[]>('SELECT status FROM jobs WHERE id = $1', [
          jobId,
        ]);
        expect(row.status).toBe('failed');
        throw new Error('the stack write failed');
      }),
    ).rejects.toThrow('the stack write failed');
    expect((await api.get(`/jobs/${jobId}`)).body.status).toBe('queued');
    expect((await api.get(`/stacks/${stackId}`)).body.status).not.toBe('failed');
  });

  it('the jobs and their stacks are written in the same transaction', async () => {
    const { stackId, jobId } = await queuedJob('atomic-commit');
    const { moved, written } = await finishAsBatch(jobId, 'failed', failedPatch(), async (manager) => {
      // Inside the transaction both are written already.
      const [row] = await manager.query<{ status: string }[]>('SELECT status FROM stacks WHERE id = $1', [
        stackId,
      ]);
      expect(row.status).toBe('failed');
    });
    expect(moved).toHaveLength(1);
    expect(written).toMatchObject({ batch: [{ id: jobId }] });
    expect((await api.get(`/jobs/${jobId}`)).body.status).toBe('failed');
    expect((await api.get(`/stacks/${stackId}`)).body.status).toBe('failed');
  });

  /**
   * Refuses, inside the database, any write that marks this stack `failed`: as a failed stack write
   * or a crash between the job's write and its stack's would. Returns the undo.
   */
  async function refuseStackFailure(stackId: string): Promise<() => Promise<void>> {
    const db = t.app.get(DataSource);
    await db.query(`CREATE OR REPLACE FUNCTION refuse_stack_failure() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.status = 'failed' AND NEW.id::text = TG_ARGV[0] THEN
          RAISE EXCEPTION 'stack write refused';
        END IF;
        RETURN NEW;
      END $$`);
    await db.query(
      `CREATE TRIGGER refuse_stack_failure BEFORE UPDATE ON stacks FOR EACH ROW EXECUTE FUNCTION refuse_stack_failure('${stackId}')`,
    );
    return async () => {
      await db.query('DROP TRIGGER refuse_stack_failure ON stacks');
      await db.query('DROP FUNCTION refuse_stack_failure()');
    };
  }

  // A job ended on its own (JobLifecycle.move: the operator's cancel and cleanup, the sweeper, an
  // agent's result outside a batch) commits with its stack too.
  for (const action of ['cancel', 'cleanup'] as const) {
    it(`a ${action} whose stack write fails leaves the job and its stack as they were`, async () => {
      const { stackId, jobId } = await queuedJob(`single-${action}`);
      expect((await api.get(`/stacks/${stackId}`)).body.status).toBe('deploying');
      const undo = await refuseStackFailure(stackId);
      try {
        const refused = await api.post(`/jobs/${jobId}/${action}`);
        expect(refused.status).toBe(500);
        expect(refused.headers['content-type']).toContain('application/problem+json');
        // Without the shared transaction the job had ended here, its stack still `deploying`.
        expect((await api.get(`/jobs/${jobId}`)).body.status).toBe('queued');
        expect((await api.get(`/stacks/${stackId}`)).body.status).toBe('deploying');
      } finally {
        await undo();
      }
      const done = await api.post(`/jobs/${jobId}/${action}`);
      expect(done.status).toBe(200);
      expect((await api.get(`/jobs/${jobId}`)).body.status).toBe(
        action === 'cancel' ? 'cancelled' : 'failed',
      );
      expect((await api.get(`/stacks/${stackId}`)).body.status).toBe('failed');
    });
  }

  it('a cancelled destroy sets its stack failed in the same transaction', async () => {
    const token = await api.post('/join-tokens', { pre_approved: true });
    const worker = await enrollAgent(t.url, token.body.token as string, 'destroy-node');
    const created = await api.yaml('post', '/stacks', stackYaml('single-destroy'));
    const stackId = created.body.id as string;
    // Placed on a worker that is not connected: its destroy waits in the queue.
    await t.app.get(DataSource).query(`UPDATE stacks SET worker_id = $2 WHERE id = $1`, [stackId, worker.id]);
    const destroy = await api.delete(`/stacks/${stackId}`);
    expect(destroy.status).toBe(202);
    const jobId = destroy.body.id as string;
    expect((await api.get(`/jobs/${jobId}`)).body.status).toBe('queued');
    const before = (await api.get(`/stacks/${stackId}`)).body.status as string;
    expect(before).not.toBe('failed');
    const undo = await refuseStackFailure(stackId);
    try {
      expect((await api.post(`/jobs/${jobId}/cancel`)).status).toBe(500);
      expect((await api.get(`/jobs/${jobId}`)).body.status).toBe('queued');
      expect((await api.get(`/stacks/${stackId}`)).body.status).toBe(before);
    } finally {
      await undo();
    }
    expect((await api.post(`/jobs/${jobId}/cancel`)).status).toBe(200);
    expect((await api.get(`/jobs/${jobId}`)).body.status).toBe('cancelled');
    expect((await api.get(`/stacks/${stackId}`)).body.status).toBe('failed');
  });

  /** A stack placed on a worker that is not connected, with its destroy job `running` there. */
  async function runningDestroy(name: string): Promise<{ stackId: string; jobId: string }> {
    const token = await api.post('/join-tokens', { pre_approved: true });
    const worker = await enrollAgent(t.url, token.body.token as string, `${name}-node`);
    const created = await api.yaml('post', '/stacks', stackYaml(name));
    const stackId = created.body.id as string;
    const db = t.app.get(DataSource);
    await db.query(`UPDATE stacks SET worker_id = $2 WHERE id = $1`, [stackId, worker.id]);
    const destroy = await api.delete(`/stacks/${stackId}`);
    expect(destroy.status).toBe(202);
    const jobId = destroy.body.id as string;
    // As if dispatched and confirmed by its agent.
    await db.query(`UPDATE jobs SET status = 'running', worker_id = $2 WHERE id = $1`, [jobId, worker.id]);
    return { stackId, jobId };
  }

  const succeededPatch = () => ({ results: [], error: null, progress: 100, finishedAt: new Date() });

  it('a destroy that succeeds in a batch deletes its stack in the same transaction', async () => {
    const { stackId, jobId } = await runningDestroy('batch-destroy');
    const { moved, written } = await finishAsBatch(jobId, 'succeeded', succeededPatch(), async (manager) => {
      // Inside the transaction the stack is gone already.
      expect(await manager.query('SELECT id FROM stacks WHERE id = $1', [stackId])).toEqual([]);
    });
    expect(moved).toHaveLength(1);
    expect(written).toMatchObject({ destroyed: [{ job: { id: jobId }, owner: 'default' }] });
    expect((await api.get(`/jobs/${jobId}`)).body.status).toBe('succeeded');
    expect((await api.get(`/stacks/${stackId}`)).status).toBe(404);
  });

  it('a destroy whose stack deletion fails leaves the job and its stack as they were', async () => {
    const { stackId, jobId } = await runningDestroy('single-destroy-ok');
    const db = t.app.get(DataSource);
    await db.query(`CREATE OR REPLACE FUNCTION refuse_stack_delete() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        RAISE EXCEPTION 'stack deletion refused';
      END $$`);
    await db.query(
      `CREATE TRIGGER refuse_stack_delete BEFORE DELETE ON stacks FOR EACH ROW EXECUTE FUNCTION refuse_stack_delete()`,
    );
    const lifecycle = t.app.get(JobLifecycle);
    try {
      await expect(
        lifecycle.move(jobId, { type: 'succeeded' }, succeededPatch(), { reachedNode: true }),
      ).rejects.toThrow('stack deletion refused');
      // Without the shared transaction the job had succeeded here, its stack still there.
      expect((await api.get(`/jobs/${jobId}`)).body.status).toBe('running');
      expect((await api.get(`/stacks/${stackId}`)).body.status).toBe('destroying');
    } finally {
      await db.query('DROP TRIGGER refuse_stack_delete ON stacks');
      await db.query('DROP FUNCTION refuse_stack_delete()');
    }
    const moved = await lifecycle.move(jobId, { type: 'succeeded' }, succeededPatch(), { reachedNode: true });
    expect(moved?.job.status).toBe('succeeded');
    // Once the job reads succeeded its stack is gone, and the destruction is audited.
    expect((await api.get(`/jobs/${jobId}`)).body.status).toBe('succeeded');
    expect((await api.get(`/stacks/${stackId}`)).status).toBe(404);
    const [audit] = await db.query<{ details: { job_id: string } }[]>(
      `SELECT details FROM audit_events WHERE action = 'stack.destroyed' AND target = $1`,
      [stackId],
    );
    expect(audit?.details.job_id).toBe(jobId);
  });

  it('a never-placed stack whose destroy cannot finish gets its job failed, and can be destroyed again', async () => {
    const created = await api.yaml('post', '/stacks', stackYaml('never-placed-destroy'));
    const stackId = created.body.id as string;
    const db = t.app.get(DataSource);
    // The cleanup before the stack's deletion reads this table: the read fails.
    await db.query('ALTER TABLE stack_monitoring_clients RENAME TO stack_monitoring_clients_away');
    try {
      expect((await api.delete(`/stacks/${stackId}`)).status).toBe(500);
    } finally {
      await db.query('ALTER TABLE stack_monitoring_clients_away RENAME TO stack_monitoring_clients');
    }
    const jobs = (await api.get(`/jobs?stack_id=${stackId}`)).body.jobs as { status: string }[];
    // Without the abort the job stayed queued with no worker, for no dispatcher to take.
    expect(jobs.map((j) => j.status)).toEqual(['failed']);
    expect((await api.get(`/stacks/${stackId}`)).body.status).toBe('failed');
    const again = await api.delete(`/stacks/${stackId}`);
    expect(again.status).toBe(202);
    expect(again.body.status).toBe('succeeded');
    expect((await api.get(`/stacks/${stackId}`)).status).toBe(404);
  });

  it('the sweep leaves a queued job whose last dispatch is older than its timeout in the queue', async () => {
    const token = await api.post('/join-tokens', { pre_approved: true });
    const worker = await enrollAgent(t.url, token.body.token as string, 'away-node');
    const { jobId } = await queuedJob('requeued');
    // As after an unconfirmed dispatch an hour ago (JOB_TIMEOUT is 10 minutes): queued again, placed
    // on a worker that is not connected now.
    await t.app
      .get(DataSource)
      .query(
        `UPDATE jobs SET worker_id = $2, attempts = 1, dispatched_at = now() - interval '1 hour' WHERE id = $1`,
        [jobId, worker.id],
      );
    const due = await t.app.get(JobsRepository).forSweep(new Date(), 30_000);
    expect(due.map((d) => d.job.id)).not.toContain(jobId);
    // Two sweeps later (one a second with the default timeouts) it is still waiting.
    await new Promise((r) => setTimeout(r, 2500));
    expect(((await api.get(`/jobs/${jobId}`)).body as { status: string }).status).toBe('queued');
  });
});
