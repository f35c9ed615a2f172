import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { AgentProcess } from '../support/agent-process.js';
import { eventually } from '../support/app.js';

const AGENT_MAIN = fileURLToPath(new URL('../../dist/agent/main.js', import.meta.url));

const run = (args: string[], env: Record<string, string> = {}) =>
  spawnSync(process.execPath, [AGENT_MAIN, ...args], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '', ...env },
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

  it('refuses a --server that is not an http(s) URL and an --agent-endpoint that is not host:port, naming it', () => {
    const noServer = run([]);
    expect(noServer.status).toBe(2);
    expect(noServer.stderr).toContain('--server is required');
    const bare = run(['--server', 'http://127.0.0.1:1,127.0.0.1:5260']);
    expect(bare.status).toBe(2);
    expect(bare.stderr).toContain(
      `--server wants the service's http:// or https:// URL, got "127.0.0.1:5260"`,
    );
    const endpoints = ['127.0.0.1:5263', '127.0.0.1:5263,https://127.0.0.1:5263'];
    const endpoint = run([
      '--server',
      'http://127.0.0.1:1',
      ...endpoints.flatMap((e) => ['--agent-endpoint', e]),
    ]);
    expect(endpoint.status).toBe(2);
    expect(endpoint.stderr).toContain('--agent-endpoint wants host:port entries');
    expect(endpoint.stderr).toContain('got "https://127.0.0.1:5263"');
  });

  it('takes the join token one way only, from a readable file that holds nothing else', () => {
    const dir = mkdtempSync(join(tmpdir(), 'so-token-'));
    const server = ['--server', 'http://127.0.0.1:1'];
    const twice = run([...server, '--token', 'sojt_a.b'], { STACK_AGENT_TOKEN: 'sojt_a.b' });
    expect(twice.status).toBe(2);
    expect(twice.stderr).toContain('give the join token one way');
    const missing = run([...server, '--token-file', join(dir, 'absent')]);
    expect(missing.status).toBe(2);
    expect(missing.stderr).toContain('--token-file: cannot read');
    writeFileSync(join(dir, 'two'), 'sojt_a.b\nsojt_c.d\n');
    const two = run([...server, '--token-file', join(dir, 'two')]);
    expect(two.status).toBe(2);
    expect(two.stderr).toContain('must hold the join token and nothing else');
  });

  it('stops at once on SIGTERM while a request to the service hangs', async () => {
    // A "service" that accepts connections and never answers: enrollment waits on it.
    const sockets: Socket[] = [];
    const silent = createServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as AddressInfo;
    try {
      const agent = AgentProcess.start({ server: `http://127.0.0.1:${port}`, token: 'sojt_abc.def' });
      await eventually(() => sockets.length > 0);
      // Before the fix the agent sat out the request's 30 s timeout; the test's own limit is 20 s.
      expect(await agent.stop('SIGTERM')).toBe(0);
      expect(agent.logged('stopped')).toBe(true);
      expect(agent.logged('enrollment failed; retrying')).toBe(false);
    } finally {
      for (const socket of sockets) socket.destroy();
      silent.close();
    }
  }, 20_000);
});
