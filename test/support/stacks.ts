import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import { AgentProcess } from './agent-process.js';
import { eventually, type TestApp } from './app.js';

/** The tiny HTTP service the process-driver tests deploy. */
export const HTTP_SERVICE = fileURLToPath(new URL('../fixtures/http-service.mjs', import.meta.url));

export { freePort } from './ports.js';

export interface JobBody {
  id: string;
  type: string;
  status: string;
  worker_id: string | null;
  error: string | null;
  progress: number;
  attempts: number;
  results: { name: string; action: string; ok: boolean; error: string | null }[] | null;
  stack_id: string;
}

/** A client of the orchestrator API with the admin token. */
export function orchestrator(t: TestApp) {
  const auth = () => t.adminAuth();
  return {
    async get(path: string) {
      return t.http.get(`/api/v1/orchestrator${path}`).set('Authorization', await auth());
    },
    async post(path: string, body?: object) {
      const req = t.http.post(`/api/v1/orchestrator${path}`).set('Authorization', await auth());
      return body ? req.send(body) : req;
    },
    async delete(path: string) {
      return t.http.delete(`/api/v1/orchestrator${path}`).set('Authorization', await auth());
    },
    async yaml(method: 'post' | 'put', path: string, source: string) {
      return t.http[method](`/api/v1/orchestrator${path}`)
        .set('Authorization', await auth())
        .set('Content-Type', 'application/yaml')
        .send(source);
    },
    /** Waits until the job reaches one of `statuses` and returns it. */
    async jobUntil(id: string, statuses: string[], timeoutMs = 30_000): Promise<JobBody> {
      let job: JobBody | undefined;
      await eventually(async () => {
        const res = await this.get(`/jobs/${id}`);
        expect(res.status).toBe(200);
        job = res.body as JobBody;
        return statuses.includes(job.status);
      }, timeoutMs);
      return job!;
    },
  };
}

/** GET http://127.0.0.1:port/path as text, or the connection error's code. */
export async function httpGet(
  port: number,
  path: string,
): Promise<{ status: number; text: string } | string> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(2000) });
    return { status: res.status, text: await res.text() };
  } catch (err) {
    return String((err as { cause?: { code?: string } }).cause?.code ?? (err as Error).message);
  }
}

/** The pid of a process-driver service, from the agent's pid file (`<pid>\n<program>`); 0 when none. */
export function servicePid(agentDataDir: string, stackId: string, service: string): number {
  const file = join(agentDataDir, 'services', stackId, `${service}.pid`);
  if (!existsSync(file)) return 0;
  return Number(readFileSync(file, 'utf8').split('\n')[0]);
}

/**
 * A real agent (process driver) enrolled with a pre-approved join token, once its worker is
 * connected and reporting; the worker's id with it.
 */
export async function connectedAgent(
  t: TestApp,
  name: string,
  options: { env?: Record<string, string> } = {},
): Promise<{ agent: AgentProcess; workerId: string }> {
  const api = orchestrator(t);
  const token = await api.post('/join-tokens', { pre_approved: true });
  expect(token.status).toBe(201);
  const agent = AgentProcess.start({
    server: t.url,
    token: token.body.token as string,
    name,
    env: options.env,
  });
  let workerId = '';
  await eventually(async () => {
    const res = await api.get('/workers');
    const w = (res.body.workers as { id: string; name: string; connected: boolean; status: string }[]).find(
      (x) => x.name === name,
    );
    workerId = w?.id ?? '';
    return w !== undefined && w.connected && ['healthy', 'degraded'].includes(w.status);
  }, 20_000);
  return { agent, workerId };
}

/**
 * One process-driver service of a stack's `services:` block: the fixture HTTP service on `port`
 * (VERSION 7, `restart: never`, healthy), which prints a line when it starts and `?line=` of /log;
 * `extra` adds indented keys (metrics).
 */
export const fixtureService = (name: string, port: number, extra = ''): string => `
  ${name}:
    command: ["${process.execPath}", "${HTTP_SERVICE}"]
    env: { PORT: "${port}", VERSION: "7" }
    ports: [${port}]
    restart: never
    resources: { cpu: 0.1, memory: 64Mi }
    health_check: { path: /health, port: ${port}, interval: 1s }
${extra}`;

/**
 * A stack of one process service `web`, the fixture HTTP service on `port`, under `restart: never`
 * (a kill from outside stays down: drift). `zone` asks for a worker label no agent has.
 */
export const webStackYaml = (
  name: string,
  port: number,
  opts: { version?: string; failHealth?: boolean; zone?: string } = {},
): string => `
name: ${name}
stackkit: basement-kit
services:
  web:
    command: ["${process.execPath}", "${HTTP_SERVICE}"]
    env:
      PORT: "${port}"
      VERSION: "${opts.version ?? '1'}"
      FAIL_HEALTH: "${opts.failHealth ? '1' : '0'}"
    ports: [${port}]
    restart: never
    resources: { cpu: 0.1, memory: 64Mi }
    health_check: { path: /health, port: ${port}, interval: 1s }
${opts.zone ? `    placement:\n      labels:\n        zone: ${opts.zone}\n` : ''}`;

export interface ShopStackOptions {
  /** Publish the service (`public: {port}`) under its owner's base subdomain. */
  isPublic: boolean;
  version: string;
  /** A variable the service's env refers to (`${NAME}`), e.g. one the agent lacks: the deploy fails. */
  envRef?: string;
  stack?: string;
  service?: string;
}

/** A stack (`shop` by default) of one process service (`web`): the fixture HTTP service on `port`. */
export function shopYaml(port: number, options: ShopStackOptions): string {
  return `
name: ${options.stack ?? 'shop'}
stackkit: basement-kit
services:
  ${options.service ?? 'web'}:
    command: ["${process.execPath}", "${HTTP_SERVICE}"]
    env:
      PORT: "${port}"
      VERSION: "${options.version}"
${options.envRef ? `      SECRET_VALUE: "\${${options.envRef}}"\n` : ''}    ports: [${port}]
    restart: never
    resources: { cpu: 0.1, memory: 64Mi }
${options.isPublic ? `    public: { port: ${port} }\n` : ''}`;
}

/**
 * An app environment for tests with a real agent and drift: fast heartbeats and drift checks, and
 * a worker that stays healthy however busy the machine running the tests is.
 */
export const FAST_AGENT_ENV = {
  HEARTBEAT_INTERVAL: '300ms',
  DRIFT_CHECK_INTERVAL: '1s',
  WORKER_DEGRADED_PERCENT: '100',
  WORKER_UNHEALTHY_PERCENT: '100',
};
