import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import { ADMIN } from './app.js';

/** The built stackctl (npm run build). */
export const CLI = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function requireBuiltCli(): void {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run npm run build first`);
}

/**
 * Runs the built stackctl with exactly `env` (plus PATH), so no STACKCTL_* variable of the shell
 * running the tests leaks in; `input` is written to its standard input, which is closed either way.
 * Asynchronous: the service answering it runs in this process. Whatever the command, the admin's
 * secret and the strings in `secrets` never show, and no raw control character reaches the terminal.
 */
export async function stackctl(
  args: string[],
  env: Record<string, string> = {},
  options: { input?: string; secrets?: string[] } = {},
): Promise<CliRun> {
  const run = await new Promise<CliRun>((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    // stackctl may exit before reading everything (a refused option): that is not the test's failure.
    child.stdin.on('error', () => undefined);
    child.stdin.end(options.input ?? '');
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
  for (const secret of [ADMIN.secret, ...(options.secrets ?? [])])
    expect(run.stdout + run.stderr).not.toContain(secret);
  expect(run.stdout + run.stderr).not.toMatch(/[^\P{Cc}\n]/u);
  return run;
}

/** The JSON stackctl printed, after checking it succeeded. */
export function jsonOf<T>(run: CliRun): T {
  expect(run.stderr).toBe('');
  expect(run.code).toBe(0);
  return JSON.parse(run.stdout) as T;
}
