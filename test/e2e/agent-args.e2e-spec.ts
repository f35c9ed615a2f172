import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const AGENT_MAIN = fileURLToPath(new URL('../../dist/agent/main.js', import.meta.url));

const run = (args: string[]) =>
  spawnSync(process.execPath, [AGENT_MAIN, ...args], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '' },
  });

/** The built agent refuses bad options with exit 2 and a message, before it contacts anything. */
describe('stack-agent options', () => {
  it('refuses malformed docker ulimits, drivers and probe ports', () => {
    const ulimits = run([
      '--server',
      'http://127.0.0.1:1',
      '--driver',
      'docker',
      '--docker-ulimits',
      'nofile=abc',
    ]);
    expect(ulimits.status).toBe(2);
    expect(ulimits.stderr).toContain('--docker-ulimits: invalid ulimit "nofile=abc"');
    const driver = run(['--server', 'http://127.0.0.1:1', '--driver', 'vm']);
    expect(driver.status).toBe(2);
    expect(driver.stderr).toContain('--driver is docker or process');
    const probe = run(['--server', 'http://127.0.0.1:1', '--probe-port', 'x']);
    expect(probe.status).toBe(2);
    expect(probe.stderr).toContain('--probe-port');
  });
});
