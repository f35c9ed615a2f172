import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { POLL_MS } from '../../src/server/jobs/job-dispatcher.js';
import { JobsRepository } from '../../src/server/jobs/jobs.repository.js';
import { eventually, startTestApp, type TestApp } from '../support/app.js';
import { connectAgent, enrollAgent } from '../support/grpc-agent.js';
import { orchestrator } from '../support/stacks.js';

/**
 * The dispatcher's rounds on its timer (every POLL_MS, for jobs other replicas queue) ask whether
 * any job is queued before the claim, which names every live worker: with nothing queued they cost
 * one index lookup. A job queued without this replica hearing of it is still found by the next one.
 */
describe('the dispatcher with nothing queued', () => {
  let t: TestApp;
  let api: ReturnType<typeof orchestrator>;

  beforeAll(async () => {
    t = await startTestApp();
    api = orchestrator(t);
  });
  afterAll(() => t?.close());

  it('does not claim while the queue is empty, and finds a job queued behind its back', async () => {
    const token = await api.post('/join-tokens', { pre_approved: true });
    const identity = await enrollAgent(t.url, token.body.token as string, 'idle-dispatch');
    const endpoint = (await api.get('/info')).body.agent_endpoint as string;
    const agent = await connectAgent(endpoint, identity, 1000, { cpu_cores: 4, memory_bytes: 8 * 2 ** 30 });
    const repository = t.app.get(JobsRepository);
    const db = t.app.get(DataSource);
    try {
      const created = await api.yaml(
        'post',
        '/stacks',
        `
name: idle-dispatch
stackkit: basement-kit
services:
  web:
    command: ["${process.execPath}", "-e", "setInterval(() => {}, 1000)"]
    resources: { cpu: 0.1, memory: 64Mi }
`,
      );
      expect(created.status, created.text).toBe(201);
      const deployed = await api.post(`/stacks/${created.body.id as string}/deploy`);
      expect(deployed.status, deployed.text).toBe(202);
      const jobId = deployed.body.id as string;
      const status = async () => (await repository.findById(jobId))!.status;
      await eventually(async () => (await status()) === 'dispatched');

      const asked = vi.spyOn(repository, 'anyQueued');
      const claimedPlaced = vi.spyOn(repository, 'claimPlaced');
      const claimed = vi.spyOn(repository, 'claim');
      try {
        await new Promise((r) => setTimeout(r, 6 * POLL_MS));
        expect(asked.mock.calls.length).toBeGreaterThanOrEqual(3);
        expect(claimedPlaced).not.toHaveBeenCalled();
        expect(claimed).not.toHaveBeenCalled();
        // Queued again as another replica would leave it, with no word to this one.
        await db.query(`UPDATE jobs SET status = 'queued', dispatched_at = NULL WHERE id = $1`, [jobId]);
        await eventually(async () => (await status()) === 'dispatched');
        expect(claimedPlaced.mock.calls.length + claimed.mock.calls.length).toBeGreaterThan(0);
      } finally {
        asked.mockRestore();
        claimedPlaced.mockRestore();
        claimed.mockRestore();
      }
    } finally {
      agent.close();
    }
  });
});
