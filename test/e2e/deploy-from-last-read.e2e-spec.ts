import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { JobsRepository } from '../../src/server/jobs/jobs.repository.js';
import { StacksRepository } from '../../src/server/stacks/stacks.repository.js';
import { eventually, startTestApp, type TestApp } from '../support/app.js';
import { connectAgent, enrollAgent } from '../support/grpc-agent.js';
import { createClient } from '../support/mcp-clients.js';
import { orchestrator } from '../support/stacks.js';

const stackYaml = (name: string, memory = '64Mi') => `
name: ${name}
stackkit: basement-kit
services:
  web:
    command: ["${process.execPath}", "-e", "setInterval(() => {}, 1000)"]
    resources: { cpu: 0.1, memory: ${memory} }
`;

/**
 * A deploy of a stack this replica deployed before makes its job from what that deploy read and
 * stores it in one statement, which checks the stack is still as read (StacksService.deploy,
 * JobsRepository.insert with `ifStack`). Whatever changed the stack meanwhile, here or on another
 * replica (written straight to the database below), the job is made from the stack as it is now.
 */
describe('a deploy from what the last deploy read', () => {
  let t: TestApp;
  let api: ReturnType<typeof orchestrator>;
  let db: DataSource;

  beforeAll(async () => {
    t = await startTestApp();
    api = orchestrator(t);
    db = t.app.get(DataSource);
  });
  afterAll(() => t?.close());

  /** A stack deployed once (no worker exists, so the job stays queued), that job then cancelled. */
  async function deployedOnce(name: string): Promise<string> {
    const created = await api.yaml('post', '/stacks', stackYaml(name));
    expect(created.status, created.text).toBe(201);
    const id = created.body.id as string;
    await deployAndCancel(id);
    return id;
  }

  async function deploy(id: string) {
    const res = await api.post(`/stacks/${id}/deploy`);
    expect(res.status, res.text).toBe(202);
    return res.body as { id: string; revision: number; status: string; worker_id: string | null };
  }

  async function deployAndCancel(id: string) {
    const job = await deploy(id);
    expect((await api.post(`/jobs/${job.id}/cancel`)).status).toBe(200);
    return job;
  }

  const stored = async (jobId: string) => (await t.app.get(JobsRepository).findById(jobId))!;

  it('skips the read when the stack is unchanged, and the job is the same as a read would make', async () => {
    const id = await deployedOnce('snapshot-same');
    const reads = vi.spyOn(t.app.get(StacksRepository), 'findInOwnerWithDefinition');
    try {
      const job = await deployAndCancel(id);
      expect(reads).not.toHaveBeenCalled();
      const again = await stored(job.id);
      expect(again).toMatchObject({ stackId: id, revision: 1, workerId: null, type: 'provision' });
      expect(again.payload.command.keep).toEqual([]);
      // The audit row and the stack's status went with it.
      const [audit] = await db.query<{ n: number }[]>(
        `SELECT count(*)::int AS n FROM audit_events WHERE action = 'stack.deploy_requested' AND details->>'job_id' = $1`,
        [job.id],
      );
      expect(audit.n).toBe(1);
    } finally {
      reads.mockRestore();
    }
  });

  it('a big stack is read at every deploy (what a replica keeps is bounded)', async () => {
    // Two environment values of 40 KiB: its definition and payload take more than the 64 KiB a
    // remembered deploy may hold.
    const big = 'x'.repeat(40 * 1024);
    const created = await api.yaml(
      'post',
      '/stacks',
      `${stackYaml('snapshot-big')}    env: { A: "${big}", B: "${big}" }\n`,
    );
    expect(created.status, created.text).toBe(201);
    const id = created.body.id as string;
    await deployAndCancel(id);
    const reads = vi.spyOn(t.app.get(StacksRepository), 'findInOwnerWithDefinition');
    try {
      await deployAndCancel(id);
      expect(reads).toHaveBeenCalledTimes(1);
    } finally {
      reads.mockRestore();
    }
  });

  it('drift ignores set elsewhere since reach the job', async () => {
    const id = await deployedOnce('snapshot-ignores');
    await db.query(`UPDATE stacks SET drift_ignores = '["web"]' WHERE id = $1`, [id]);
    const job = await deploy(id);
    expect((await stored(job.id)).payload.command.keep).toEqual(['web']);
  });

  it('a new revision since is the one deployed', async () => {
    const id = await deployedOnce('snapshot-revision');
    const put = await api.yaml('put', `/stacks/${id}`, stackYaml('snapshot-revision', '96Mi'));
    expect(put.status, put.text).toBe(200);
    const job = await deploy(id);
    expect(job.revision).toBe(2);
    expect(JSON.stringify((await stored(job.id)).payload.command.services)).toContain(
      String(96 * 1024 * 1024),
    );
  });

  it('a worker placed elsewhere since gets the job', async () => {
    const id = await deployedOnce('snapshot-worker');
    const token = await api.post('/join-tokens', { pre_approved: true });
    const worker = await enrollAgent(t.url, token.body.token as string, 'snapshot-node');
    await db.query(`UPDATE stacks SET worker_id = $2 WHERE id = $1`, [id, worker.id]);
    const job = await deploy(id);
    expect((await stored(job.id)).workerId).toBe(worker.id);
  });

  it('a stack being destroyed since is refused, and nothing is stored', async () => {
    const id = await deployedOnce('snapshot-destroying');
    await db.query(`UPDATE stacks SET status = 'destroying' WHERE id = $1`, [id]);
    const before = await db.query<{ n: number }[]>(
      `SELECT count(*)::int AS n FROM jobs WHERE stack_id = $1`,
      [id],
    );
    const res = await api.post(`/stacks/${id}/deploy`);
    expect(res.status, res.text).toBe(409);
    const after = await db.query<{ n: number }[]>(`SELECT count(*)::int AS n FROM jobs WHERE stack_id = $1`, [
      id,
    ]);
    expect(after[0].n).toBe(before[0].n);
  });

  it('a stack removed since is not found', async () => {
    const id = await deployedOnce('snapshot-removed');
    await db.query(`DELETE FROM jobs WHERE stack_id = $1`, [id]);
    await db.query(`DELETE FROM stacks WHERE id = $1`, [id]);
    expect((await api.post(`/stacks/${id}/deploy`)).status).toBe(404);
  });

  it('another tenant cannot deploy it, however recently it was deployed', async () => {
    const id = await deployedOnce('snapshot-tenant');
    const tokenB = await t.token(
      await createClient(
        t.url,
        await t.adminAuth(),
        'snapshot-b',
        ['orchestrator:read', 'orchestrator:write'],
        'snapshot-b',
      ),
    );
    const res = await t.http
      .post(`/api/v1/orchestrator/stacks/${id}/deploy`)
      .set('Authorization', `Bearer ${tokenB.access_token}`);
    expect(res.status).toBe(404);
    const [jobs] = await db.query<{ n: number }[]>(
      `SELECT count(*)::int AS n FROM jobs WHERE owner = 'snapshot-b'`,
    );
    expect(jobs.n).toBe(0);
  });

  it('a second deploy while the first is under way is a conflict, with no audit row', async () => {
    const id = await deployedOnce('snapshot-busy');
    await deploy(id);
    const res = await api.post(`/stacks/${id}/deploy`);
    expect(res.status, res.text).toBe(409);
    const [audit] = await db.query<{ n: number }[]>(
      `SELECT count(*)::int AS n FROM audit_events WHERE action = 'stack.deploy_requested' AND target = $1`,
      [id],
    );
    expect(audit.n).toBe(2);
  });
  // Last: its connected worker would take the queued jobs of the tests above.
  it('a stack placed by its first deploy is deployed again without a read', async () => {
    const token = await api.post('/join-tokens', { pre_approved: true });
    const identity = await enrollAgent(t.url, token.body.token as string, 'snapshot-live');
    const endpoint = (await api.get('/info')).body.agent_endpoint as string;
    const agent = await connectAgent(endpoint, identity, 1000, { cpu_cores: 4, memory_bytes: 8 * 2 ** 30 });
    try {
      const created = await api.yaml('post', '/stacks', stackYaml('snapshot-placed'));
      const id = created.body.id as string;
      const first = await deploy(id);
      await eventually(async () => (await stored(first.id)).status === 'dispatched');
      expect((await api.get(`/stacks/${id}`)).body.worker_id).toBe(identity.id);
      // The hand-rolled agent never answers: the job ends here as if it had.
      await db.query(`UPDATE jobs SET status = 'succeeded', finished_at = now() WHERE id = $1`, [first.id]);
      const reads = vi.spyOn(t.app.get(StacksRepository), 'findInOwnerWithDefinition');
      try {
        const again = await deploy(id);
        expect(reads).not.toHaveBeenCalled();
        // Its worker is live here: the request put the job on the agent's stream itself, without
        // the queue (dispatched when it was made).
        expect(again).toMatchObject({ status: 'dispatched', worker_id: identity.id, attempts: 1 });
        const job = await stored(again.id);
        expect(job).toMatchObject({ status: 'dispatched', workerId: identity.id, attempts: 1 });
        expect(job.dispatchedAt).toEqual(job.createdAt);
        // Back in the queue, as another replica's request or an unconfirmed dispatch leaves it: the
        // dispatcher claims it with the one statement for placed stacks (once the rounds have
        // stopped starting with the claim that places, which the first deploy above needed).
        const claims = vi.spyOn(t.app.get(JobsRepository), 'claimPlaced');
        try {
          await eventually(() => claims.mock.calls.length > 0);
          await db.query(
            `UPDATE jobs SET status = 'queued', attempts = 0, dispatched_at = NULL WHERE id = $1`,
            [again.id],
          );
          await eventually(async () => (await stored(again.id)).status === 'dispatched');
          const claimed = await Promise.all(
            claims.mock.results.map((r) => r.value as ReturnType<JobsRepository['claimPlaced']>),
          );
          expect(claimed.flatMap((c) => c.jobs.map((j) => j.id))).toContain(again.id);
        } finally {
          claims.mockRestore();
        }
        const sent = await stored(again.id);
        expect(sent).toMatchObject({ workerId: identity.id, attempts: 1 });
        expect(sent.dispatchedAt!.getTime()).toBeGreaterThan(sent.createdAt.getTime());
      } finally {
        reads.mockRestore();
      }
    } finally {
      agent.close();
    }
  });
});
