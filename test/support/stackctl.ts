import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import { ADMIN } from './app.js';

/** The built stackctl and agent (npm run build). */
export const CLI = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
export const AGENT = fileURLToPath(new URL('../../dist/agent/main.js', import.meta.url));

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Fails fast when a program the test runs was not built. */
export function requireBuilt(programs: string[] = [CLI]): void {
  for (const program of programs)
    if (!existsSync(program)) throw new Error(`${program} is missing: run npm run build first`);
}

export interface StackctlOptions {
  /** Written to its standard input, which is closed either way. */
  input?: string;
  /** Strings that must never show in its output, besides the admin's secret. */
  secrets?: string[];
  /** Its working directory (this process's by default). */
  cwd?: string;
}

/**
 * The built stackctl with exactly `env` (plus PATH), so no STACKCTL_* variable of the shell running
 * the tests leaks in, started: what it wrote to stderr so far, and its run when it ends. Asynchronous:
 * the service answering it runs in this process. Whatever the command, the admin's secret and
 * `secrets` never show, and no raw control character reaches the terminal.
 */
export function startStackctl(
  args: string[],
  env: Record<string, string> = {},
  options: StackctlOptions = {},
): {
  stdoutSoFar: () => string;
  stderrSoFar: () => string;
  kill: (signal: NodeJS.Signals) => void;
  done: Promise<CliRun>;
} {
  const child = spawn(process.execPath, [CLI, ...args], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
    cwd: options.cwd,
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  // stackctl may exit before reading everything (a refused option): that is not the test's failure.
  child.stdin.on('error', () => undefined);
  child.stdin.end(options.input ?? '');
  const done = new Promise<CliRun>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  }).then((run) => {
    for (const secret of [ADMIN.secret, ...(options.secrets ?? [])])
      expect(run.stdout + run.stderr).not.toContain(secret);
    expect(run.stdout + run.stderr).not.toMatch(/[^\P{Cc}\n]/u);
    return run;
  });
  return {
    stdoutSoFar: () => stdout,
    stderrSoFar: () => stderr,
    kill: (signal) => void child.kill(signal),
    done,
  };
}

/** Runs the built stackctl to its end (see {@link startStackctl}). */
export const stackctl = (
  args: string[],
  env: Record<string, string> = {},
  options: StackctlOptions = {},
): Promise<CliRun> => startStackctl(args, env, options).done;

/** The JSON stackctl printed, after checking it succeeded. */
export function jsonOf<T>(run: CliRun): T {
  expect(run.stderr).toBe('');
  expect(run.code).toBe(0);
  return JSON.parse(run.stdout) as T;
}
