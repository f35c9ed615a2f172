import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, get, type Server as HttpServer } from 'node:http';
import { connect, createServer, type AddressInfo, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  SshTunnelProvider,
  type SshProviderOptions,
} from '../../src/server/tunnel/providers/ssh-provider.js';
import type { SshTunnelSettings } from '../../src/server/tunnel/providers/ssh-settings.js';
import { TunnelConfigError, TunnelConnectError } from '../../src/server/tunnel/providers/tunnel-provider.js';
import { freePort } from '../support/ports.js';
import { startRelay, type Relay } from '../support/relay.js';

// A real sshd on loopback is the relay; the "instance" is an HTTP server and a TCP echo server (the
// agent port) on loopback ports of their own. Everything stays on 127.0.0.1.

const never = new AbortController().signal;

function httpGet(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    get({ host: '127.0.0.1', port, path: '/hello', agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve(body));
    }).on('error', reject);
  });
}

function echo(port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(text));
    let got = '';
    socket.on('data', (chunk) => {
      got += chunk.toString('utf8');
      if (got.length >= text.length) socket.end();
    });
    socket.on('close', () => resolve(got));
    socket.on('error', reject);
  });
}

/** Whether a TCP connection to the port is refused (nothing listens there). */
function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.destroy();
      resolve(false);
    });
    socket.on('error', (err: NodeJS.ErrnoException) => resolve(err.code === 'ECONNREFUSED'));
  });
}

function listen<T extends Server | HttpServer>(server: T): Promise<number> {
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)),
  );
}

describe('ssh tunnel provider against a real sshd', () => {
  let relay: Relay;
  let http: HttpServer;
  let echoServer: Server;
  let localHttpPort: number;
  let localAgentPort: number;
  let scratch: string;

  beforeAll(async () => {
    relay = await startRelay();
    http = createHttpServer((req, res) => res.end(`hello from the instance, ${req.url}`));
    echoServer = createServer((socket) => socket.pipe(socket));
    localHttpPort = await listen(http);
    localAgentPort = await listen(echoServer);
    scratch = mkdtempSync(join(tmpdir(), 'so-tunnel-'));
  });

  afterAll(async () => {
    await relay?.close();
    http?.close();
    echoServer?.close();
    rmSync(scratch, { recursive: true, force: true });
  });

  /** A provider for the shared relay, on two remote ports of its own unless `settings` names them. */
  async function fixture(
    settings: Partial<SshTunnelSettings> = {},
    options: Partial<SshProviderOptions> = {},
  ) {
    const all = {
      ...relay.settings,
      remotePort: await freePort(),
      agentRemotePort: await freePort(),
      publicUrl: 'https://orchestrator.tunnel.test',
      ...settings,
    };
    const provider = new SshTunnelProvider({
      settings: all,
      localHttpPort,
      localAgentPort,
      remoteBindAddress: '127.0.0.1',
      // Short enough for the keepalive test, long enough that a busy machine is not taken for a dead relay.
      keepaliveIntervalMs: 1000,
      keepaliveCountMax: 2,
      readyTimeoutMs: 10_000,
      ...options,
    });
    return { provider, remotePort: all.remotePort, agentRemotePort: all.agentRemotePort };
  }

  it('carries the HTTP port and the agent port through the relay, and close() unbinds both', async () => {
    const { provider: p, remotePort, agentRemotePort } = await fixture();
    expect(p.checkConfig()).toEqual([]);
    const tunnel = await p.connect(never);
    expect(tunnel.publicUrl).toBe('https://orchestrator.tunnel.test');
    expect(tunnel.agentEndpoint).toBe(`127.0.0.1:${agentRemotePort}`);

    expect(await httpGet(remotePort)).toBe('hello from the instance, /hello');
    expect(await echo(agentRemotePort, 'agent bytes through the relay')).toBe(
      'agent bytes through the relay',
    );

    const held = connect(agentRemotePort, '127.0.0.1');
    await new Promise((resolve) => held.once('connect', resolve));
    await expect.poll(() => tunnel.activeStreams, { timeout: 5000 }).toBe(1);
    held.destroy();
    await expect.poll(() => tunnel.activeStreams, { timeout: 5000 }).toBe(0);

    await tunnel.close();
    expect(await tunnel.closed).toEqual({});
    expect(await refused(remotePort)).toBe(true);
    expect(await refused(agentRemotePort)).toBe(true);
  });

  it('refuses a relay whose host key is not the configured one, before logging in', async () => {
    const { provider: p, remotePort } = await fixture({ hostKey: relay.otherFingerprint });
    const logBefore = relay.log().length;
    const attempt = p.connect(never);
    await expect(attempt).rejects.toBeInstanceOf(TunnelConnectError);
    const message = await attempt.then(
      () => '',
      (err: Error) => err.message,
    );
    expect(message).toContain(`presented host key ${relay.hostKeyFingerprint}`);
    expect(message).toContain(`not TUNNEL_SSH_HOST_KEY ${relay.otherFingerprint}`);
    expect(await refused(remotePort)).toBe(true);
    const since = relay.log().slice(logBefore);
    expect(since).toContain('Connection from 127.0.0.1');
    expect(since).not.toContain('Accepted publickey');
  });

  it('will not start without the host key fingerprint, and says so', async () => {
    const { provider: p } = await fixture({ hostKey: undefined });
    const problems = p.checkConfig();
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^TUNNEL_SSH_HOST_KEY is not set: .*ssh-keygen -lf/);
    const logBefore = relay.log().length;
    const attempt = p.connect(never);
    await expect(attempt).rejects.toBeInstanceOf(TunnelConfigError);
    await expect(attempt).rejects.toMatchObject({ status: 409, problems });
    expect(relay.log().slice(logBefore)).not.toContain('Connection from');
  });

  it('says in words when the key file is not a key, without repeating its content', async () => {
    const keyFile = join(scratch, 'not-a-key');
    writeFileSync(keyFile, 'secret-material-that-is-not-a-key\n', { mode: 0o600 });
    const attempt = (await fixture({ keyFile })).provider.connect(never);
    await expect(attempt).rejects.toThrow(
      `TUNNEL_SSH_KEY_FILE ${keyFile} is not a usable OpenSSH private key`,
    );
    await expect(attempt).rejects.not.toThrow('secret-material');
  });

  it('says in words when the relay does not accept the key', async () => {
    const attempt = (await fixture({ keyFile: relay.otherKeyFile })).provider.connect(never);
    await expect(attempt).rejects.toThrow(
      `the relay 127.0.0.1:${relay.port} refused the key in TUNNEL_SSH_KEY_FILE for user ${relay.user}`,
    );
  });

  it('says in words when the relay cannot bind the remote port', async () => {
    const occupied = createServer();
    const port = await listen(occupied);
    try {
      const attempt = (await fixture({ remotePort: port })).provider.connect(never);
      await expect(attempt).rejects.toThrow(`refused to listen on 127.0.0.1 port ${port}`);
    } finally {
      occupied.close();
    }
  });

  it('notices a relay that stops answering through keepalives', async () => {
    const tunnel = await (await fixture()).provider.connect(never);
    relay.pause();
    try {
      const closed = await tunnel.closed;
      expect(closed.error).toBe(
        `the relay 127.0.0.1:${relay.port} stopped answering (no keepalive reply for 3 s)`,
      );
    } finally {
      relay.resume();
    }
  });

  it('gives up a connection attempt when its signal is aborted', async () => {
    relay.pause();
    try {
      const abort = new AbortController();
      const attempt = (await fixture({}, { readyTimeoutMs: 30_000 })).provider.connect(abort.signal);
      setTimeout(() => abort.abort(), 200);
      await expect(attempt).rejects.toThrow('the connection attempt was cancelled');
    } finally {
      relay.resume();
    }
  });

  it('reports a stopped relay with a reason, and connects again once it is back', async () => {
    const { provider: p, remotePort } = await fixture();
    const tunnel = await p.connect(never);
    await relay.stop();
    expect((await tunnel.closed).error).toMatch(
      /^the relay 127\.0\.0\.1:\d+ (closed the SSH connection|reset)/,
    );
    expect(await refused(remotePort)).toBe(true);
    await expect(p.connect(never)).rejects.toThrow(
      `cannot reach the relay 127.0.0.1:${relay.port}: connection refused`,
    );

    await relay.start();
    const again = await p.connect(never);
    expect(await httpGet(remotePort)).toBe('hello from the instance, /hello');
    await again.close();
  });
});

describe('ssh tunnel provider with the default bind address', () => {
  it("binds where the relay's GatewayPorts allows (loopback only with `no`), within PermitListen", async () => {
    const remotePort = await freePort();
    const agentRemotePort = await freePort();
    const relay = await startRelay({ gatewayPorts: 'no', permitListen: `${remotePort} ${agentRemotePort}` });
    const http = createHttpServer((_req, res) => res.end('default bind'));
    try {
      const localHttpPort = await listen(http);
      const provider = (ports: { remotePort: number; agentRemotePort: number }) =>
        new SshTunnelProvider({
          settings: { ...relay.settings, ...ports, publicUrl: 'http://relay.test:8080' },
          localHttpPort,
          localAgentPort: 5263,
          agentPublicHost: 'agents.relay.test',
        });
      const tunnel = await provider({ remotePort, agentRemotePort }).connect(never);
      expect(tunnel.agentEndpoint).toBe(`agents.relay.test:${agentRemotePort}`);
      expect(await httpGet(remotePort)).toBe('default bind');
      await tunnel.close();

      const notPermitted = await freePort();
      await expect(provider({ remotePort, agentRemotePort: notPermitted }).connect(never)).rejects.toThrow(
        `refused to listen on every address port ${notPermitted}`,
      );
    } finally {
      http.close();
      await relay.close();
    }
  });
});
