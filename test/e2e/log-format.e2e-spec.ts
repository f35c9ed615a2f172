import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually, testEnv } from '../support/app.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { ServiceProcess } from '../support/service-process.js';

/** A readable line: `[HH:MM:ss.mmm] LEVEL: [component] message {...}`, colours aside. */
const PRETTY_LINE = /^\[\d{2}:\d{2}:\d{2}\.\d{3}\] (TRACE|DEBUG|INFO|WARN|ERROR|FATAL): /;
// eslint-disable-next-line no-control-regex
const ANSI = /\u001b\[[0-9;]*m/g;
const NEST_STARTUP = ['Mapped {', 'dependencies initialized'];

const isJson = (line: string): boolean => {
  try {
    return typeof JSON.parse(line) === 'object';
  } catch {
    return false;
  }
};

/** `npm start`'s log lines on stdout: readable on a terminal, JSON everywhere else (docs/operations.md). */
describe('log format on stdout', () => {
  const cleanups: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  async function start(
    extra: Record<string, string>,
    options: { terminal?: boolean; bootstrap?: boolean } = {},
  ): Promise<{ service: ServiceProcess; db: TestDatabase }> {
    const db = await createTestDatabase();
    cleanups.push(() => db.drop());
    const env = testEnv(db, extra);
    if (options.bootstrap === false) {
      delete env.BOOTSTRAP_CLIENT_ID;
      delete env.BOOTSTRAP_CLIENT_SECRET;
    }
    const service = await ServiceProcess.start(env, options);
    cleanups.push(() => service.stop('SIGKILL'));
    await service.waitStarted();
    return { service, db };
  }

  /** Log lines of the service's files under DATA_DIR/logs. */
  const fileLines = (dataDir: string): string[] =>
    readdirSync(join(dataDir, 'logs'))
      .filter((name) => name.endsWith('.jsonl'))
      .flatMap((name) => readFileSync(join(dataDir, 'logs', name), 'utf8').split('\n'))
      .filter(Boolean);

  it('LOG_FORMAT=pretty: one readable line per record on stdout, without colours off a terminal; JSON in the files', async () => {
    const { service, db } = await start({ LOG_FORMAT: 'pretty' });
    await fetch(`${service.url}/api/v1/orchestrator/info`, {
      headers: { authorization: await service.adminAuth() },
    });
    await eventually(() =>
      service.stdout.some((l) => l.includes('[http] GET /api/v1/orchestrator/info 200')),
    );
    expect(service.stdout.length).toBeGreaterThan(3);
    for (const line of service.stdout) expect(line).toMatch(PRETTY_LINE);
    expect(service.stdout.filter(isJson)).toEqual([]);
    expect(service.stdout.join('\n')).not.toMatch(ANSI);
    expect(service.stdout.find((l) => l.includes('[main] service started'))).toMatch(/^\[[\d:.]+\] INFO: /);
    // The request's fields stay on its line.
    expect(service.stdout.find((l) => l.includes('GET /api/v1/orchestrator/info 200'))).toMatch(
      /"duration_ms":\d+/,
    );

    // pino-roll writes asynchronously.
    await eventually(() =>
      fileLines(db.dataDir).some((l) => l.includes('GET /api/v1/orchestrator/info 200')),
    );
    const files = fileLines(db.dataDir);
    expect(files.filter((l) => !isJson(l))).toEqual([]);
    expect(files.some((l) => (JSON.parse(l) as { msg: string }).msg === 'service started')).toBe(true);
  });

  it('no LOG_FORMAT off a terminal: JSON lines; no Nest start-up lines at info; the banner names the console', async () => {
    const { service } = await start({}, { bootstrap: false });
    expect(service.stdout.length).toBeGreaterThan(3);
    expect(service.stdout.filter((l) => !isJson(l))).toEqual([]);
    const text = service.stdout.join('\n');
    for (const noise of NEST_STARTUP) expect(text).not.toContain(noise);
    expect(service.records().find((r) => r.msg === 'service started')).toMatchObject({
      level: 'INFO',
      console_url: 'http://127.0.0.1/console',
    });
    // The first-start banner, on stderr with the generated secret.
    expect(service.stderrText()).toMatch(/^ {2}console: +http:\/\/127\.0\.0\.1\/console$/m);
    expect(service.stderrText()).toMatch(/client_secret: +sos_/);
  });

  it('LOG_LEVEL=debug shows Nest start-up lines, at debug', async () => {
    const { service } = await start({ LOG_LEVEL: 'debug' });
    const records = service.records();
    const mapped = records.filter((r) => r.msg.startsWith('Mapped {'));
    expect(mapped.length).toBeGreaterThan(10);
    expect(new Set(mapped.map((r) => r.level))).toEqual(new Set(['DEBUG']));
    const initialized = records.filter((r) => r.msg.endsWith('dependencies initialized'));
    expect(initialized.length).toBeGreaterThan(5);
    expect(new Set(initialized.map((r) => r.level))).toEqual(new Set(['DEBUG']));
    expect(initialized[0].component).toBe('InstanceLoader');
  });

  it('no LOG_FORMAT on a terminal: readable, coloured lines', async () => {
    const { service } = await start({}, { terminal: true, bootstrap: false });
    // The terminal's output comes through \`script\`, a process of its own, which on a busy machine
    // may pass it on after the service already answers its health probe.
    await eventually(
      () =>
        service.stdout.some((l) => l.includes('service started')) &&
        service.stdout.some((l) => l.includes('console:')),
    );
    const lines = service.stdout.map((l) => l.replace(ANSI, ''));
    const logLines = lines.filter((l) => l.startsWith('['));
    expect(logLines.length).toBeGreaterThan(3);
    for (const line of logLines) expect(line).toMatch(PRETTY_LINE);
    expect(lines.filter(isJson)).toEqual([]);
    // Colours: the level and message are wrapped in escape codes.
    expect(service.stdout.find((l) => l.includes('service started'))).toMatch(ANSI);
    expect(logLines.some((l) => / INFO: \[main\] service started /.test(l))).toBe(true);
    for (const noise of NEST_STARTUP) expect(lines.join('\n')).not.toContain(noise);
    // The banner (stderr shares the terminal) names the console.
    expect(lines).toContain('  console:       http://127.0.0.1/console');
  });
});
