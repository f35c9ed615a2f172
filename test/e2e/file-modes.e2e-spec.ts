import { chmodSync, existsSync, lstatSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentProcess } from '../support/agent-process.js';
import { eventually, startTestApp, testEnv, type TestApp } from '../support/app.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { testDb } from '../support/env.js';
import { ServiceProcess } from '../support/service-process.js';
import { freePort, HTTP_SERVICE, httpGet, orchestrator } from '../support/stacks.js';

/** `path mode` of `root` and of every file and directory under it that has a group or other bit. */
function exposed(root: string): string[] {
  const found: string[] = [];
  const visit = (path: string): void => {
    const stat = lstatSync(path);
    if (stat.mode & 0o077) found.push(`${path} ${(stat.mode & 0o777).toString(8)}`);
    if (stat.isDirectory()) for (const name of readdirSync(path)) visit(join(path, name));
  };
  visit(root);
  return found;
}

/** What an older version left: everything readable and writable by every local user. */
function openToAll(root: string): void {
  const stat = lstatSync(root);
  if (stat.isSymbolicLink()) return;
  chmodSync(root, stat.isDirectory() ? 0o777 : 0o666);
  if (stat.isDirectory()) for (const name of readdirSync(root)) openToAll(join(root, name));
}

const REPAIRED = /^made files and directories in the data directory private to the (service|agent) user$/;

/**
 * The service's DATA_DIR (embedded database and its WAL, logs, master key) and the agent's data
 * directory (identity, desired state, services' pid and output files) are the owner's alone, under
 * the most permissive umask: this process runs with umask 000, and the agent and its services inherit
 * it.
 */
describe('files at rest are private to the user the programs run as', () => {
  const root = mkdtempSync(join(tmpdir(), 'so-modes-'));
  // Neither exists yet: the programs create them.
  const agentDataDir = join(root, 'agent');
  let db: TestDatabase;
  let ports: Record<string, string>;
  let t: TestApp | undefined;
  let service: ServiceProcess | undefined;
  let agent: AgentProcess | undefined;
  let servicePort: number;
  let stackId: string;
  let umask: number;

  beforeAll(async () => {
    umask = process.umask(0);
    const copy = await createTestDatabase();
    // The migrated template on the pglite run is not what a first start sees: start from nothing.
    rmSync(copy.dataDir, { recursive: true, force: true });
    db = { ...copy, dataDir: join(root, 'data') };
    ports = { PORT: String(await freePort()), AGENT_PORT: String(await freePort()) };
    servicePort = await freePort();
  });

  afterAll(async () => {
    await agent?.stop();
    await t?.close({ drop: false });
    await service?.stop();
    await db?.drop();
    process.umask(umask);
    rmSync(root, { recursive: true, force: true });
  });

  const env = {
    HEARTBEAT_INTERVAL: '300ms',
    WORKER_DEGRADED_PERCENT: '100',
    WORKER_UNHEALTHY_PERCENT: '100',
  };

  function startAgent(url: string, token?: string): AgentProcess {
    return (agent = AgentProcess.start({ server: url, token, name: 'modes-node', dataDir: agentDataDir }));
  }

  it('a fresh data directory: what both programs create, while they run and after they stop', async () => {
    t = await startTestApp({ db, env: { ...env, ...ports } });
    const api = orchestrator(t);
    const token = await api.post('/join-tokens', { pre_approved: true });
    expect(token.status).toBe(201);
    startAgent(t.url, token.body.token as string);
    await eventually(() => agent!.logged('connected'), 20_000);

    // Rows in several tables, and a service whose output and pid the agent keeps.
    const created = await api.yaml(
      'post',
      '/stacks',
      `
name: modes
stackkit: basement-kit
variant: default
services:
  web:
    command: ["${process.execPath}", "${HTTP_SERVICE}"]
    env:
      PORT: "${servicePort}"
      API_KEY: "literal-secret-value"
    ports: [${servicePort}]
    restart: on-failure
`,
    );
    expect(created.status, created.text).toBe(201);
    stackId = created.body.id as string;
    const deploy = await api.post(`/stacks/${stackId}/deploy`);
    expect(deploy.status, deploy.text).toBe(202);
    const job = await api.jobUntil(deploy.body.id as string, ['succeeded', 'failed']);
    expect(job.status, JSON.stringify(job)).toBe('succeeded');
    await eventually(() => existsSync(join(agentDataDir, 'services', stackId, 'web.log')));

    // Everything is there that the test means to check.
    if (testDb() === 'pglite')
      expect(existsSync(join(db.dataDir, 'pgdata', 'global', 'pg_control'))).toBe(true);
    expect(existsSync(join(db.dataDir, 'secrets', 'master.key'))).toBe(true);
    expect(readdirSync(join(db.dataDir, 'logs')).length).toBeGreaterThan(0);
    for (const name of ['key.pem', 'cert.pem', 'ca.pem', 'identity.json', `stacks/${stackId}.json`])
      expect(existsSync(join(agentDataDir, name)), name).toBe(true);
    expect(existsSync(join(agentDataDir, 'services', stackId, 'web.pid'))).toBe(true);

    expect(exposed(db.dataDir)).toEqual([]);
    expect(exposed(agentDataDir)).toEqual([]);

    // Nothing needed repairing: the programs created it all owner-only.
    expect(t.logs.records().some((r) => REPAIRED.test(r.msg))).toBe(false);
    expect(agent!.records().some((r) => REPAIRED.test(r.msg))).toBe(false);

    await agent!.stop();
    await t.close({ drop: false });
    t = undefined;
    expect(exposed(db.dataDir)).toEqual([]);
    expect(exposed(agentDataDir)).toEqual([]);
  });

  it('an old data directory, open to all, is repaired at start', async () => {
    openToAll(db.dataDir);
    openToAll(agentDataDir);
    const wide = [...exposed(db.dataDir), ...exposed(agentDataDir)].join('\n');
    for (const path of [
      'data/secrets/master.key',
      'data/logs/service.1.jsonl',
      ...(testDb() === 'pglite' ? ['data/pgdata/global/pg_control', 'data/pgdata/pg_wal'] : []),
      'agent/key.pem',
      `agent/stacks/${stackId}.json`,
      `agent/services/${stackId}/web.log`,
    ])
      expect(wide).toContain(`${root}/${path} `);

    // The built service this time (nestjs-pino keeps one root logger per process, so a second app
    // in this process would log into the first one's capture); it inherits the umask too.
    service = await ServiceProcess.start(testEnv(db, { ...env, ...ports }));
    await service.waitStarted();
    expect(service.records().some((r) => r.level === 'WARN' && REPAIRED.test(r.msg))).toBe(true);
    // The same identity, endpoint and stack as before: the agent reconnects and restores its service.
    startAgent(service.url);
    await eventually(() => agent!.logged('connected') && agent!.logged('stack restored'), 20_000);
    expect(agent!.records().some((r) => r.level === 'WARN' && REPAIRED.test(r.msg))).toBe(true);
    await eventually(async () => {
      const res = await httpGet(servicePort, '/health');
      return typeof res !== 'string' && res.status === 200;
    });

    expect(exposed(db.dataDir)).toEqual([]);
    expect(exposed(agentDataDir)).toEqual([]);
    await agent!.stop();
    expect(await service.stop()).toBe(0);
    expect(exposed(db.dataDir)).toEqual([]);
    expect(exposed(agentDataDir)).toEqual([]);
  });
});
