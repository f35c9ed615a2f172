import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { testEnv } from '../support/app.js';
import { copyEmbeddedTemplate, createTestDatabase, type TestDatabase } from '../support/database.js';
import { ServiceProcess } from '../support/service-process.js';

describe('the service process', () => {
  const cleanups: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  async function database(): Promise<TestDatabase> {
    const db = await createTestDatabase();
    cleanups.push(() => db.drop());
    return db;
  }

  async function start(env: Record<string, string>): Promise<ServiceProcess> {
    const service = await ServiceProcess.start(env);
    cleanups.push(() => service.stop('SIGKILL'));
    return service;
  }

  it.each([
    ['PORT', 'abc'],
    ['HEARTBEAT_INTERVAL', 'fast'],
    ['DATABASE_URL', 'mysql://x'],
    ['LOG_LEVEL', 'loud'],
    ['LOG_FORMAT', 'text'],
  ])('fails fast on a bad %s, naming it', async (name, value) => {
    const service = await start({ DATA_DIR: copyEmbeddedTemplate(), [name]: value });
    expect(await service.exited).toBe(1);
    const fatal = service.records().find((r) => r.level === 'FATAL');
    expect(fatal?.component).toBe('config');
    expect(fatal?.msg).toContain(name);
  });

  it('keeps the log level across a restart and exits 0 on SIGTERM', async () => {
    const db = await database();
    const env = testEnv(db);
    const first = await start(env);
    await first.waitStarted();
    const patch = await fetch(`${first.url}/api/v1/orchestrator/settings`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json', authorization: await first.adminAuth() },
      body: JSON.stringify({ log_level: 'debug' }),
    });
    expect(patch.status).toBe(200);
    expect(await first.stop('SIGTERM')).toBe(0);
    expect(first.records().some((r) => r.msg === 'stopped')).toBe(true);

    const second = await start(env);
    await second.waitStarted();
    const settings = (await (
      await fetch(`${second.url}/api/v1/orchestrator/settings`, {
        headers: { authorization: await second.adminAuth() },
      })
    ).json()) as {
      log_level: string;
    };
    expect(settings.log_level).toBe('debug');
    await fetch(`${second.url}/health/live`);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(second.records().some((r) => r.level === 'DEBUG' && r.msg === 'GET /health/live 200')).toBe(true);
    expect(await second.stop('SIGTERM')).toBe(0);
  });

  it('on SIGTERM stops accepting, finishes the request in flight, then exits 0', async () => {
    const db = await database();
    const service = await start(testEnv(db));
    await service.waitStarted();
    const { port } = new URL(service.url);

    // A request whose body is still arriving when the signal comes.
    const authorization = await service.adminAuth();
    const body = JSON.stringify({ log_level: 'warn' });
    const socket = connect(Number(port), '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    let response = '';
    socket.on('data', (chunk: Buffer) => (response += chunk.toString()));
    const closed = new Promise((resolve) => socket.once('close', resolve));
    socket.write(
      `PATCH /api/v1/orchestrator/settings HTTP/1.1\r\nHost: x\r\nAuthorization: ${authorization}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 5)}`,
    );
    await new Promise((resolve) => setTimeout(resolve, 200));
    service.child.kill('SIGTERM');
    await new Promise((resolve) => setTimeout(resolve, 500));

    expect(service.child.exitCode).toBeNull();
    await expect(fetch(`${service.url}/health/live`)).rejects.toThrow();

    socket.write(body.slice(5));
    await closed;
    expect(response).toMatch(/^HTTP\/1\.1 200 /);
    expect(response).toContain('"log_level":"warn"');
    expect(await service.exited).toBe(0);
  });

  it('generates the bootstrap admin when none is configured, prints it once on stderr, never in the logs', async () => {
    const dataDir = copyEmbeddedTemplate();
    const first = await start({ DATA_DIR: dataDir });
    await first.waitStarted();
    const printed = first.stderrText();
    const clientId = /client_id:\s+(\S+)/.exec(printed)?.[1];
    const secret = /client_secret:\s+(\S+)/.exec(printed)?.[1];
    expect(clientId).toMatch(/^cli_/);
    expect(secret).toMatch(/^sos_/);
    const token = await fetch(`${first.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ grant_type: 'client_credentials', client_id: clientId, client_secret: secret }),
    });
    expect(token.status).toBe(200);
    expect(((await token.json()) as { scope: string }).scope).toBe('admin');
    expect(first.stdout.join('\n')).not.toContain(secret!);
    expect(first.records().some((r) => r.msg.includes('bootstrap admin client generated'))).toBe(true);
    expect(await first.stop('SIGTERM')).toBe(0);

    const second = await start({ DATA_DIR: dataDir });
    await second.waitStarted();
    expect(second.stderrText()).not.toContain('client_secret');
    expect(await second.stop('SIGTERM')).toBe(0);
  });

  it('refuses to open an embedded database another process holds', async () => {
    const dataDir = copyEmbeddedTemplate();
    const first = await start({ DATA_DIR: dataDir });
    await first.waitStarted();
    const second = await start({ DATA_DIR: dataDir });
    expect(await second.exited).toBe(1);
    expect(second.records().find((r) => r.level === 'FATAL')?.msg).toMatch(/in use by process \d+/);
    expect((await fetch(`${first.url}/health/ready`)).status).toBe(200);
    expect(await first.stop('SIGTERM')).toBe(0);
  });
});
