import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ADMIN } from './app.js';
import type { LogRecord } from './log-capture.js';

const MAIN = fileURLToPath(new URL('../../dist/server/bundle/main.mjs', import.meta.url));

import { freePort } from './ports.js';

export { freePort };

/** The built service (`dist/server/bundle/main.mjs`, as `npm start` runs it) in a child process. */
export class ServiceProcess {
  readonly stdout: string[] = [];
  readonly stderr: string[] = [];
  readonly exited: Promise<number | null>;
  readonly stderrText: () => string;

  private constructor(
    readonly child: ChildProcess,
    readonly url: string,
    readonly env: Record<string, string>,
  ) {
    let partial = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      // A pseudo-terminal ends lines with \r\n.
      const parts = (partial + chunk.toString('utf8')).replaceAll('\r', '').split('\n');
      partial = parts.pop() ?? '';
      this.stdout.push(...parts.filter(Boolean));
    });
    child.stderr?.on('data', (chunk: Buffer) => this.stderr.push(chunk.toString('utf8')));
    this.exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
    this.stderrText = () => this.stderr.join('');
  }

  /**
   * Starts the service with exactly `env` (plus PATH), on a free port unless PORT is given.
   * `terminal`: on a pseudo-terminal, as `npm start` in a shell runs it (util-linux `script`
   * allocates it; the service's stdout and stderr then both arrive on `stdout`).
   */
  static async start(
    env: Record<string, string>,
    options: { terminal?: boolean } = {},
  ): Promise<ServiceProcess> {
    const port = env.PORT && env.PORT !== '0' ? env.PORT : String(await freePort());
    const childEnv = { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', AGENT_PORT: '0', ...env, PORT: port };
    const child = options.terminal
      ? spawn('script', ['-qfc', `'${process.execPath}' '${MAIN}'`, '/dev/null'], {
          env: childEnv,
          // script ends the session when its input ends: keep it open.
          stdio: ['pipe', 'pipe', 'pipe'],
        })
      : spawn(process.execPath, [MAIN], { env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
    return new ServiceProcess(child, `http://127.0.0.1:${port}`, env);
  }

  /** `Bearer <token>` of the bootstrap admin the environment names. */
  async adminAuth(): Promise<string> {
    const res = await fetch(`${this.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        grant_type: 'client_credentials',
        client_id: this.env.BOOTSTRAP_CLIENT_ID,
        client_secret: this.env.BOOTSTRAP_CLIENT_SECRET,
      }),
    });
    if (res.status !== 200) throw new Error(`token request failed: ${res.status} ${await res.text()}`);
    return `Bearer ${((await res.json()) as { access_token: string }).access_token}`;
  }

  records(): LogRecord[] {
    return this.stdout.flatMap((line) => {
      try {
        return [JSON.parse(line) as LogRecord];
      } catch {
        return [];
      }
    });
  }

  /** Waits until /health/startup answers 200, or fails if the process exits first. */
  async waitStarted(timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let exited = false;
    void this.exited.then(() => (exited = true));
    // What the last probe got, for the failure message: a status and body, or the error.
    let last = 'no answer yet';
    while (Date.now() < deadline) {
      if (exited)
        throw new Error(
          `service exited during start-up:\n${this.stdout.join('\n')}\n${this.stderr.join('')}`,
        );
      try {
        const res = await fetch(`${this.url}/health/startup`, { signal: AbortSignal.timeout(5_000) });
        if (res.status === 200) return;
        last = `${res.status} ${(await res.text()).slice(0, 500)}`;
      } catch (err) {
        // not listening yet, or not answering
        last = String((err as Error).cause ?? err);
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(
      `service did not start within ${timeoutMs} ms (last probe: ${last}):\n${this.stdout.join('\n')}`,
    );
  }

  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
    if (this.child.exitCode === null) this.child.kill(signal);
    return this.exited;
  }
}

/**
 * Replicas of the built service on one PostgreSQL database, each with a data directory of its own,
 * started one after the other (the first creates the bootstrap client and the CA, the next read
 * them). `stop()` kills them all and removes their directories.
 */
export async function startReplicas(
  databaseUrl: string,
  count: number,
  env: Record<string, string> = {},
): Promise<{ replicas: ServiceProcess[]; stop: () => Promise<void> }> {
  const shared = {
    DATABASE_URL: databaseUrl,
    // The agent CA's and the signing keys' private halves are sealed in the database under this
    // key: replicas with data directories of their own must share it, or they cannot read them.
    ENCRYPTION_KEY: randomBytes(24).toString('base64'),
    BOOTSTRAP_CLIENT_ID: ADMIN.clientId,
    BOOTSTRAP_CLIENT_SECRET: ADMIN.secret,
    PUBLIC_URL: 'http://127.0.0.1',
    TUNNEL_STUN_SERVERS: 'none',
    ...env,
  };
  const replicas: ServiceProcess[] = [];
  const dataDirs: string[] = [];
  const stop = async () => {
    await Promise.all(replicas.map((r) => r.stop('SIGKILL')));
    for (const dir of dataDirs) rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (let i = 0; i < count; i++) {
      const dataDir = mkdtempSync(join(tmpdir(), `so-replica-${i}-`));
      dataDirs.push(dataDir);
      const svc = await ServiceProcess.start({ ...shared, DATA_DIR: dataDir });
      replicas.push(svc);
      await svc.waitStarted();
    }
  } catch (err) {
    await stop();
    throw err;
  }
  return { replicas, stop };
}
