import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  CloudflaredTunnelProvider,
  type CloudflaredProviderOptions,
} from '../../src/server/tunnel/providers/cloudflared-provider.js';
import { TunnelConfigError } from '../../src/server/tunnel/providers/tunnel-provider.js';

// The real cloudflared cannot be installed where tests run: test/fixtures/fake-cloudflared.mjs stands
// in for it (cloudflared's own log lines, no network), found as `cloudflared` on a search path of its
// own, exactly as the provider finds the real one.

const FAKE = fileURLToPath(new URL('../fixtures/fake-cloudflared.mjs', import.meta.url));
const never = new AbortController().signal;
const TOKEN = 'eyJhIjoiMTIzIiwidCI6IjQ1NiIsInMiOiJzZWNyZXQifQ';
const SECRET_VARIABLE = 'SO_TUNNEL_TEST_SECRET';

interface Report {
  pid: number;
  argv: string[];
  tunnelToken: string | null;
  envKeys: string[];
  url: string | null;
}

interface Fake {
  searchPath: string;
  report(): Report;
}

let root: string;
let count = 0;

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'so-cloudflared-'));
  process.env[SECRET_VARIABLE] = 'must-not-reach-cloudflared';
});

afterAll(() => {
  delete process.env[SECRET_VARIABLE];
  rmSync(root, { recursive: true, force: true });
});

/** A directory holding a `cloudflared` that runs the stand-in with these FAKE_CLOUDFLARED_* settings. */
function fakeOnPath(settings: Record<string, string | number> = {}): Fake {
  const dir = join(root, `bin-${++count}`);
  const reportFile = join(dir, 'report.json');
  const exports = Object.entries({ REPORT: reportFile, ...settings })
    .map(([key, value]) => `export FAKE_CLOUDFLARED_${key}='${value}'\n`)
    .join('');
  mkdirSync(dir);
  writeFileSync(join(dir, 'cloudflared'), `#!/bin/sh\n${exports}exec '${FAKE}' "$@"\n`, { mode: 0o755 });
  return { searchPath: dir, report: () => JSON.parse(readFileSync(reportFile, 'utf8')) as Report };
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

const opened: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((c) => c.close()));
});

function provider(fake: Fake, options: Partial<CloudflaredProviderOptions> = {}): CloudflaredTunnelProvider {
  return new CloudflaredTunnelProvider({
    localHttpPort: 5260,
    searchPath: fake.searchPath,
    parentEnv: process.env,
    ...options,
  });
}

describe('cloudflared tunnel provider (against a stand-in for cloudflared)', () => {
  it('runs a quick tunnel, reads its URL, and stops cloudflared on close()', async () => {
    const fake = fakeOnPath();
    const p = provider(fake, { localHttpPort: 18080 });
    expect(p.checkConfig()).toEqual([]);
    const tunnel = await p.connect(never);
    const report = fake.report();
    expect(report.argv).toEqual(['tunnel', '--no-autoupdate', '--url', 'http://127.0.0.1:18080']);
    expect(tunnel.publicUrl).toBe(report.url);
    expect(tunnel.publicUrl).toMatch(/^https:\/\/[a-z]+(-[a-z]+){3}\.trycloudflare\.com$/);
    expect(tunnel.agentEndpoint).toBeNull();
    expect(alive(report.pid)).toBe(true);

    await tunnel.close();
    expect(await tunnel.closed).toEqual({});
    expect(alive(report.pid)).toBe(false);
  });

  it('runs a named tunnel with the token in its environment only, never in argv', async () => {
    const fake = fakeOnPath();
    const tunnel = await provider(fake, { token: TOKEN, publicUrl: 'https://so.example.test' }).connect(
      never,
    );
    opened.push(tunnel);
    const report = fake.report();
    expect(report.argv).toEqual(['tunnel', '--no-autoupdate', 'run']);
    expect(report.tunnelToken).toBe(TOKEN);
    // What `ps` shows.
    expect(readFileSync(`/proc/${report.pid}/cmdline`, 'utf8')).not.toContain(TOKEN);
    expect(report.envKeys).not.toContain(SECRET_VARIABLE);
    expect(report.envKeys).toContain('PATH');
    expect(tunnel.publicUrl).toBe('https://so.example.test');
  });

  it('reports cloudflared exiting with its last error', async () => {
    const fake = fakeOnPath({ EXIT_AFTER_MS: 100 });
    const tunnel = await provider(fake, { token: TOKEN, publicUrl: 'https://so.example.test' }).connect(
      never,
    );
    const closed = await tunnel.closed;
    expect(closed.error).toMatch(/^cloudflared exited \(code 1\): Register tunnel error from server side/);
    expect(closed.error).toContain('Unauthorized: Invalid tunnel secret');
  });

  it('gives cloudflared a grace period to reconnect, then ends the tunnel with the reason', async () => {
    const fake = fakeOnPath({ DROP_AFTER_MS: 50 });
    const tunnel = await provider(fake, { reconnectGraceMs: 300 }).connect(never);
    expect(await tunnel.closed).toEqual({
      error:
        'cloudflared lost every connection to Cloudflare and did not reconnect within 0.3 s: ' +
        'timeout: no recent network activity',
    });
    expect(alive(fake.report().pid)).toBe(false);
  });

  it('keeps the tunnel when cloudflared reconnects within the grace period', async () => {
    // Without the reconnect the grace period (1 s after the drop) would end the tunnel long before
    // the exit (2.5 s after registering): the reason tells which happened.
    const fake = fakeOnPath({ DROP_AFTER_MS: 100, RECONNECT_AFTER_MS: 50, EXIT_AFTER_MS: 2500 });
    const tunnel = await provider(fake, { reconnectGraceMs: 1000 }).connect(never);
    const closed = await tunnel.closed;
    expect(closed.error).toMatch(/^cloudflared exited \(code 1\)/);
  });

  it('says why a quick tunnel could not be created', async () => {
    const attempt = provider(fakeOnPath({ SCENARIO: 'quick-fails' })).connect(never);
    await expect(attempt).rejects.toThrow(
      'cloudflared exited (code 1) before the tunnel was up: failed to request quick Tunnel: Post "https://api.trycloudflare.com/tunnel"',
    );
  });

  it('gives up when no URL comes in time, and stops cloudflared', async () => {
    const fake = fakeOnPath({ SCENARIO: 'silent' });
    await expect(provider(fake, { readyTimeoutMs: 500 }).connect(never)).rejects.toThrow(
      'cloudflared printed no quick tunnel URL within 0.5 s',
    );
    expect(alive(fake.report().pid)).toBe(false);
  });

  it('gives up an attempt when its signal is aborted', async () => {
    const fake = fakeOnPath({ SCENARIO: 'silent' });
    const abort = new AbortController();
    const attempt = provider(fake, { readyTimeoutMs: 30_000 }).connect(abort.signal);
    await expect.poll(() => existsSync(join(fake.searchPath, 'report.json'))).toBe(true);
    abort.abort();
    await expect(attempt).rejects.toThrow('the connection attempt was cancelled');
    expect(alive(fake.report().pid)).toBe(false);
  });

  it('kills a cloudflared that ignores SIGTERM', async () => {
    const fake = fakeOnPath({ SCENARIO: 'ignore-sigterm' });
    const tunnel = await provider(fake, { stopTimeoutMs: 300 }).connect(never);
    await tunnel.close();
    expect(alive(fake.report().pid)).toBe(false);
  });

  it('says so when the program cannot be started', async () => {
    const dir = mkdtempSync(join(root, 'broken-'));
    writeFileSync(join(dir, 'cloudflared'), '#!/nonexistent/interpreter\n', { mode: 0o755 });
    const attempt = new CloudflaredTunnelProvider({
      localHttpPort: 5260,
      searchPath: dir,
      parentEnv: process.env,
    }).connect(never);
    await expect(attempt).rejects.toThrow('cloudflared could not be started (ENOENT)');
  });

  it('refuses to start without the program, or a named tunnel without its public URL', async () => {
    const empty = mkdtempSync(join(root, 'empty-'));
    const missing = new CloudflaredTunnelProvider({
      localHttpPort: 5260,
      searchPath: empty,
      parentEnv: process.env,
    });
    expect(missing.checkConfig()).toEqual([
      'The cloudflared program is not on PATH: install cloudflared, or use TUNNEL_PROVIDER=ssh.',
    ]);
    await expect(missing.connect(never)).rejects.toBeInstanceOf(TunnelConfigError);

    const named = provider(fakeOnPath(), { token: TOKEN });
    expect(named.checkConfig()).toEqual([
      "TUNNEL_PUBLIC_URL is not set: the named tunnel's public hostname, which cloudflared does not print.",
    ]);
    expect(provider(fakeOnPath(), { token: 'two words' }).checkConfig()[0]).toBe(
      'TUNNEL_CLOUDFLARED_TOKEN must be the tunnel token Cloudflare shows, in one piece.',
    );
  });
});
