import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type {
  AgentMessage,
  JobCommandMsg,
  JobEventMsg,
  ServiceSpecMsg,
} from '../contracts/agent-protocol/index.js';
import { ProcessDriver } from './drivers/process.driver.js';
import { JobRunner } from './job-runner.js';

const stack = { stack_id: '0c9a4f3e-2b1d-4e5f-8a7b-6c5d4e3f2a1b', stack_name: 'jobs' };

const service: ServiceSpecMsg = {
  name: 'keeper',
  image: '',
  command: ['sleep', '30'],
  env: {},
  ports: [],
  cpu: 0,
  memory_bytes: 0,
  restart: 'never',
  health_check: null,
  digest: 'sha256:keeper',
  volumes: [{ type: 'volume', source: 'data', target: '/data', read_only: false, size_bytes: 0 }],
};

const command = (job_id: string, type: string, over: Partial<JobCommandMsg> = {}): JobCommandMsg => ({
  job_id,
  type,
  ...stack,
  revision: 1,
  services: type === 'provision' ? [service] : [],
  timeout_ms: 30_000,
  attempt: 1,
  keep: [],
  replace: [],
  ...over,
});

describe('job runner: destroy and delete_volumes', () => {
  let dir: string;
  let runner: JobRunner;

  afterEach(async () => {
    await runner?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("keeps the stack's volumes on a destroy and removes them when the job says delete_volumes", async () => {
    dir = mkdtempSync(join(tmpdir(), 'so-job-runner-'));
    const log = pino({ level: 'silent' });
    runner = new JobRunner(new ProcessDriver(dir, log), dir, log, {});
    const events: JobEventMsg[] = [];
    runner.attach((message: AgentMessage) => {
      if (message.job_event) events.push(message.job_event);
      return true;
    });
    const finished = async (jobId: string) => {
      const end = Date.now() + 10_000;
      for (;;) {
        const final = events.find(
          (e) => e.job_id === jobId && ['succeeded', 'failed', 'cancelled'].includes(e.phase),
        );
        if (final) return final;
        if (Date.now() > end) throw new Error(`${jobId} did not finish`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    };
    const volumeDir = join(dir, 'volumes', stack.stack_id, 'data');

    runner.handle(command('j1', 'provision'));
    expect(await finished('j1')).toMatchObject({ phase: 'succeeded' });
    expect(existsSync(volumeDir)).toBe(true);

    runner.handle(command('j2', 'destroy'));
    expect(await finished('j2')).toMatchObject({ phase: 'succeeded' });
    expect(existsSync(volumeDir)).toBe(true);

    runner.handle(command('j3', 'provision', { revision: 2 }));
    expect(await finished('j3')).toMatchObject({ phase: 'succeeded' });
    runner.handle(command('j4', 'destroy', { delete_volumes: true }));
    const final = await finished('j4');
    expect(final).toMatchObject({ phase: 'succeeded', error: '' });
    expect(final.results.map((r) => [r.name, r.action])).toEqual([['keeper', 'removed']]);
    expect(existsSync(join(dir, 'volumes', stack.stack_id))).toBe(false);
  });
});
