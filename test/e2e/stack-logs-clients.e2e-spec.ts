import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StackLogLine, StackLogPage } from '../../src/contracts/api/stack-logs.js';
import type { AgentProcess } from '../support/agent-process.js';
import { ADMIN, eventually, startTestApp, type TestApp } from '../support/app.js';
import { connectMcp, type McpClient } from '../support/mcp-client.js';
import { createClient } from '../support/mcp-clients.js';
import { CLI, type CliRun, jsonOf, requireBuilt, stackctl, startStackctl } from '../support/stackctl.js';
import {
  connectedAgent,
  FAST_AGENT_ENV,
  fixtureService,
  freePort,
  httpGet,
  orchestrator,
} from '../support/stacks.js';

const ISO = String.raw`\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z`;

/**
 * A stack's service output read through stackctl (`stacks logs`, once and followed) and the MCP
 * tool get_stack_logs, against the real app and a real process-driver agent whose services print.
 */
describe('stack logs from stackctl and MCP', () => {
  let t: TestApp;
  let api: ReturnType<typeof orchestrator>;
  let agent: AgentProcess;
  let workerId: string;
  let stackId: string;
  let web: number;
  let worker: number;
  let env: Record<string, string>;
  /** stackctl as a client of another owner, allowed to read its own stacks. */
  let strangerEnv: Record<string, string>;
  let strangerToken: string;
  let mcp: McpClient;

  const cli = (...args: string[]): Promise<CliRun> => stackctl(args, env);
  const http = async (params: string): Promise<StackLogPage> => {
    const res = await api.get(`/stacks/${stackId}/logs${params}`);
    expect(res.status).toBe(200);
    return res.body as StackLogPage;
  };
  const say = async (port: number, line: string, stream = 'stdout') =>
    expect(await httpGet(port, `/log?line=${encodeURIComponent(line)}&stream=${stream}`)).toEqual({
      status: 204,
      text: '',
    });

  beforeAll(async () => {
    requireBuilt();
    t = await startTestApp({ env: FAST_AGENT_ENV });
    api = orchestrator(t);
    ({ agent, workerId } = await connectedAgent(t, 'logs-node'));
    [web, worker] = [await freePort(), await freePort()];
    const created = await api.yaml(
      'post',
      '/stacks',
      `name: printer\nstackkit: basement-kit\nservices:${fixtureService('web', web)}${fixtureService('worker', worker)}`,
    );
    expect(created.status).toBe(201);
    stackId = created.body.id as string;
    const job = await api.post(`/stacks/${stackId}/deploy`);
    expect((await api.jobUntil(job.body.id as string, ['succeeded', 'failed'])).status).toBe('succeeded');
    await eventually(async () => (await http('')).lines.length >= 2, 15_000);
    await say(web, 'first out');
    await say(web, 'then err', 'stderr');
    await say(worker, 'from worker');
    await eventually(async () => (await http('')).lines.length >= 5, 15_000);

    env = {
      STACKCTL_SERVER: t.url,
      STACKCTL_CLIENT_ID: ADMIN.clientId,
      STACKCTL_CLIENT_SECRET: ADMIN.secret,
    };
    const stranger = await createClient(
      t.url,
      await t.adminAuth(),
      'other-tenant',
      ['orchestrator:read'],
      'tenant-b',
    );
    strangerEnv = { ...env, STACKCTL_CLIENT_ID: stranger.clientId, STACKCTL_CLIENT_SECRET: stranger.secret };
    strangerToken = (await t.token(stranger)).access_token;
    mcp = await connectMcp(t.url, (await t.token()).access_token);
  });

  afterAll(async () => {
    await mcp?.close();
    await agent?.stop();
    await t?.close();
  });

  describe('stackctl stacks logs', () => {
    it('prints "time service stream line", oldest first, each filter passed on', async () => {
      const out = (await cli('stacks', 'logs', stackId)).stdout.trimEnd().split('\n');
      expect(out).toHaveLength(5);
      for (const line of out) expect(line).toMatch(new RegExp(`^${ISO} (web|worker) (stdout|stderr) `));
      const webLines = (await cli('stacks', 'logs', stackId, '--service', 'web')).stdout;
      expect(
        webLines
          .trimEnd()
          .split('\n')
          .map((l) => l.split(' ').slice(1).join(' ')),
      ).toEqual([
        `web stdout http-service listening on ${web}`,
        'web stdout first out',
        'web stderr then err',
      ]);
      // What HTTP answers for the same filters, line for line.
      const page = await http('?service=web');
      expect(webLines).toBe(page.lines.map((l) => `${l.time} ${l.service} ${l.stream} ${l.line}\n`).join(''));

      expect((await cli('stacks', 'logs', stackId, '--since', '2999-01-01T00:00:00Z')).stdout).toBe('');
      expect((await cli('stacks', 'logs', stackId, '--until', '1h')).stdout).toBe('');
      const recent = await cli('stacks', 'logs', stackId, '--since', '1h', '--service', 'worker');
      expect(recent.stdout).toMatch(/ worker stdout from worker\n$/);
      expect(recent.stdout.trimEnd().split('\n')).toHaveLength(2);
    });

    it('--limit keeps the newest lines and says how to read the older ones; --json is the HTTP answer', async () => {
      const limited = await cli('stacks', 'logs', stackId, '--service', 'web', '--limit', '2');
      expect(limited.code).toBe(0);
      expect(limited.stdout).toMatch(/ web stdout first out\n.* web stderr then err\n$/);
      const first = limited.stdout.split(' ')[0];
      expect(limited.stderr).toBe(
        `Older lines matched too: read them with --until ${first}, or raise --limit.\n`,
      );

      const json = jsonOf<StackLogPage>(
        await cli('--json', 'stacks', 'logs', stackId, '--service', 'web', '--limit', '2'),
      );
      expect(json).toEqual(await http('?service=web&limit=2'));
      expect(json).toMatchObject({ stack_id: stackId, truncated: true });
      expect(json.lines.map((l) => [l.worker_id, l.line])).toEqual([
        [workerId, 'first out'],
        [workerId, 'then err'],
      ]);
    });

    it.each([
      [['--since', 'yesterday'], 'since'],
      [['--since', '1h', '--until', '2h'], 'since'],
      [['--limit', '0'], 'limit'],
      [['--limit', 'many'], 'limit'],
      [['--service', 'Not_A_Label'], 'service'],
      [['--until', '1h', '--follow'], 'until'],
    ])('a bad filter %j: the service refuses it (422) and stackctl exits 1 naming it', async (args, name) => {
      const run = await cli('stacks', 'logs', stackId, ...args);
      expect(run.code).toBe(1);
      expect(run.stdout).toBe('');
      expect(run.stderr).toContain('(validation_failed');
      expect(run.stderr).toMatch(new RegExp(`^ {2}${name}: `, 'm'));
    });

    it('an empty option value is a usage error before any request', async () => {
      const run = await cli('stacks', 'logs', stackId, '--since', '');
      expect(run.code).toBe(2);
      expect(run.stderr).toContain('--since needs a value');
    });

    it("another owner's stack is not found, read once or followed", async () => {
      for (const follow of [[], ['--follow']]) {
        const run = await stackctl(['stacks', 'logs', stackId, ...follow], strangerEnv);
        expect(run.code).toBe(1);
        expect(run.stdout).toBe('');
        expect(run.stderr).toContain(`No stack ${stackId}. (not_found`);
      }
    });

    it('--follow prints the newest lines, then each new one as it arrives, until Ctrl-C', async () => {
      const follower = startStackctl(
        ['stacks', 'logs', stackId, '--follow', '--service', 'web', '--limit', '2'],
        env,
      );
      await eventually(() => follower.stdoutSoFar().includes('web stderr then err'), 15_000);
      expect(follower.stdoutSoFar()).not.toContain('listening');
      await say(web, 'live line');
      await say(worker, 'not for this follower');
      await eventually(() => follower.stdoutSoFar().includes('web stdout live line'), 15_000);
      follower.kill('SIGINT');
      const run = await follower.done;
      expect(
        run.stdout
          .trimEnd()
          .split('\n')
          .map((l) => l.split(' ').slice(1).join(' ')),
      ).toEqual(['web stdout first out', 'web stderr then err', 'web stdout live line']);
      expect(run.stdout).not.toContain('not for this follower');
    });

    it('--follow into a reader that stops (| head) ends quietly at the next line', async () => {
      const pipeline = spawn(
        'bash',
        [
          '-c',
          `set -o pipefail; '${process.execPath}' '${CLI}' stacks logs ${stackId} --follow --service web | head -n 1`,
        ],
        { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let stdout = '';
      let stderr = '';
      pipeline.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
      pipeline.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
      const exited = new Promise<number | null>((resolve) => pipeline.once('close', resolve));
      await eventually(() => stdout.includes('\n'), 15_000);
      // head has gone: stackctl learns it when it writes the next line.
      await say(web, 'nobody reads this');
      expect(await exited).toBe(0);
      expect(stdout).toMatch(new RegExp(`^${ISO} web stdout http-service listening on ${web}\n$`));
      expect(stderr).toBe('');
    });
  });

  describe('MCP get_stack_logs', () => {
    it('answers what HTTP answers for the same filters', async () => {
      // The last line the tests above wrote may still be on its way (stackctl | head can end on an
      // earlier line): compare two reads only once it is stored.
      await eventually(async () =>
        (await http('?service=web&limit=5')).lines.some((l) => l.line === 'nobody reads this'),
      );
      const tool = (await mcp.listTools()).tools.find((x) => x.name === 'get_stack_logs');
      expect(tool?.annotations).toMatchObject({ readOnlyHint: true, destructiveHint: false });
      expect(Object.keys((tool?.inputSchema as { properties: object }).properties).sort()).toEqual([
        'id',
        'limit',
        'service',
        'since',
        'until',
      ]);
      expect(await mcp.ok('get_stack_logs', { id: stackId })).toEqual(await http(''));
      const page = await http('?service=web&limit=2');
      expect(await mcp.ok('get_stack_logs', { id: stackId, service: 'web', limit: 2 })).toEqual(page);
      expect(await mcp.ok('get_stack_logs', { id: stackId, since: '1h', service: 'worker' })).toEqual(
        await http('?since=1h&service=worker'),
      );
      expect(
        await mcp.ok('get_stack_logs', { id: stackId, until: page.lines[0].time, service: 'web' }),
      ).toEqual(await http(`?until=${page.lines[0].time}&service=web`));
    });

    it.each([
      [{ limit: 1001 }, 'limit'],
      [{ limit: 0 }, 'limit'],
      [{ since: 'yesterday' }, 'since'],
      [{ since: '1h', until: '2h' }, 'since'],
      [{ service: 'Not_A_Label' }, 'service'],
    ])('refuses a bad filter %j with 422 naming it', async (args, path) => {
      const problem = await mcp.refused('get_stack_logs', { id: stackId, ...args });
      expect(problem).toMatchObject({ status: 422, code: 'validation_failed' });
      expect(problem.errors?.map((e) => e.path)).toContain(path);
    });

    it('has no follow: a tool answers once', async () => {
      const problem = await mcp.refused('get_stack_logs', { id: stackId, follow: true });
      expect(problem.status).toBe(422);
    });

    it("another owner's stack, or none, is not found", async () => {
      const stranger = await connectMcp(t.url, strangerToken);
      try {
        expect(await stranger.refused('get_stack_logs', { id: stackId })).toMatchObject({ status: 404 });
      } finally {
        await stranger.close();
      }
      expect(await mcp.refused('get_stack_logs', { id: crypto.randomUUID() })).toMatchObject({ status: 404 });
    });
  });

  // Last: it deletes the stack.
  it('stackctl --follow --json: one JSON object per line; the stream ends when the stack is deleted', async () => {
    const follower = startStackctl(
      ['--json', 'stacks', 'logs', stackId, '--follow', '--service', 'worker'],
      env,
    );
    await eventually(() => follower.stdoutSoFar().includes('from worker'), 15_000);
    await say(worker, 'last words');
    await eventually(() => follower.stdoutSoFar().includes('last words'), 15_000);
    const job = await api.delete(`/stacks/${stackId}`);
    expect(job.status).toBe(202);
    expect((await api.jobUntil(job.body.id as string, ['succeeded', 'failed'])).status).toBe('succeeded');
    // The service notices within its stack check (10 s) and ends the stream; stackctl then exits 0.
    const run = await follower.done;
    expect(run.code).toBe(0);
    expect(run.stderr).toContain('The service ended the stream: the stack was deleted.');
    const lines = run.stdout
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as StackLogLine);
    expect(lines.map((l) => [l.service, l.stream, l.line])).toEqual([
      ['worker', 'stdout', `http-service listening on ${worker}`],
      ['worker', 'stdout', 'from worker'],
      ['worker', 'stdout', 'not for this follower'],
      ['worker', 'stdout', 'last words'],
    ]);
    for (const l of lines)
      expect(l).toMatchObject({ worker_id: workerId, time: expect.stringMatching(new RegExp(`^${ISO}$`)) });
  });
});
