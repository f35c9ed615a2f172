import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { LogRecord } from './log-capture.js';

const AGENT_MAIN = fileURLToPath(new URL('../../dist/agent/main.js', import.meta.url));

/** The real agent program (`npm run agent`) as a child process. */
export class AgentProcess {
  readonly lines: string[] = [];
  readonly exited: Promise<number | null>;

  private constructor(
    readonly child: ChildProcess,
    readonly dataDir: string,
  ) {
    let partial = '';
    const take = (chunk: Buffer) => {
      const parts = (partial + chunk.toString('utf8')).split('\n');
      partial = parts.pop() ?? '';
      this.lines.push(...parts.filter(Boolean));
    };
    child.stdout?.on('data', take);
    child.stderr?.on('data', take);
    this.exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  }

  static start(options: {
    server: string;
    token?: string;
    /** How the join token reaches the agent: the environment (default), a file, or the command line. */
    tokenVia?: 'env' | 'file' | 'arg';
    dataDir?: string;
    name?: string;
    args?: string[];
    /** Extra environment (the agent otherwise gets only PATH). */
    env?: Record<string, string>;
    /** Leave out `--address 127.0.0.1`: the service then goes by the address the agent connects from. */
    noAddress?: boolean;
  }): AgentProcess {
    const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'so-agent-'));
    // Loopback only, and a free probe port per agent (several agents share this machine).
    const defaults = [
      ...(options.noAddress ? [] : ['--address', '127.0.0.1']),
      '--probe-bind',
      '127.0.0.1',
      '--probe-port',
      '0',
    ];
    const args = [
      AGENT_MAIN,
      '--server',
      options.server,
      '--data-dir',
      dataDir,
      ...defaults,
      ...(options.args ?? []),
    ];
    const tokenEnv: Record<string, string> = {};
    if (options.token) {
      const via = options.tokenVia ?? 'env';
      if (via === 'env') tokenEnv.STACK_AGENT_TOKEN = options.token;
      if (via === 'arg') args.push('--token', options.token);
      if (via === 'file') {
        const file = join(mkdtempSync(join(tmpdir(), 'so-token-')), 'join-token');
        writeFileSync(file, `${options.token}\n`, { mode: 0o600 });
        args.push('--token-file', file);
      }
    }
    if (options.name) args.push('--name', options.name);
    const child = spawn(process.execPath, args, {
      env: { PATH: process.env.PATH ?? '', ...tokenEnv, ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    return new AgentProcess(child, dataDir);
  }

  records(): LogRecord[] {
    return this.lines.flatMap((line) => {
      try {
        return [JSON.parse(line) as LogRecord];
      } catch {
        return [];
      }
    });
  }

  logged(msg: string): boolean {
    return this.records().some((r) => r.msg === msg);
  }

  signal(signal: NodeJS.Signals): void {
    this.child.kill(signal);
  }

  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      this.child.kill('SIGCONT');
      this.child.kill(signal);
    }
    return this.exited;
  }
}
