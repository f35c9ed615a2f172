import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DataSource } from 'typeorm';
import { JobsRepository } from '../../src/server/jobs/jobs.repository.js';
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
 * The timeout sweep (JobSweeper, JobsRepository.forSweep) acts on dispatched, running and cancelling
 * jobs only: a job back in the queue keeps its worker and its last dispatch time, and waits there
 * for its agent however long ago that dispatch was.
 */
describe('the jobs sweep', () => {
  let t: TestApp;
  let api: ReturnType<typeof orchestrator>;

  beforeAll(async () => {
    t = await startTestApp({ env: { JOB_ACK_TIMEOUT: '1s', JOB_TIMEOUT: '2s' } });
    api = orchestrator(t);
  });
  afterAll(() => t?.close());

  it('leaves a queued job whose last dispatch is older than its timeout in the queue', async () => {
    const token = await api.post('/join-tokens', { pre_approved: true });
    const worker = await enrollAgent(t.url, token.body.token as string, 'away-node');
    const created = await api.yaml('post', '/stacks', stackYaml('requeued'));
    const deploy = await api.post(`/stacks/${created.body.id as string}/deploy`);
    const jobId = deploy.body.id as string;
    // As after an unconfirmed dispatch an hour ago: queued again, placed on a worker not connected now.
    await t.app
      .get(DataSource)
      .query(
        `UPDATE jobs SET worker_id = $2, attempts = 1, dispatched_at = now() - interval '1 hour' WHERE id = $1`,
        [jobId, worker.id],
      );
    const due = await t.app.get(JobsRepository).forSweep(new Date(), 1000);
    expect(due.map((d) => d.job.id)).not.toContain(jobId);
    // Several sweeps later (every 250 ms with these timeouts) it is still waiting.
    await new Promise((r) => setTimeout(r, 1500));
    const job = (await api.get(`/jobs/${jobId}`)).body as { status: string; error: string | null };
    expect(job.status).toBe('queued');
  });
});
