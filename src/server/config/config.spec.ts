import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AppConfig, ConfigError, VARIABLES, loadConfig } from './config.js';
import { redactUrl } from './parsers.js';

const problemsOf = (env: Record<string, string>): string[] => {
  try {
    new AppConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
};

describe('AppConfig', () => {
  it('has the documented defaults', () => {
    const config = new AppConfig({});
    expect(config.port).toBe(5260);
    expect(config.agentPort).toBe(5263);
    expect(config.databaseUrl).toBeUndefined();
    expect(config.dataDir).toBe(resolve('./data'));
    expect(config.publicUrl).toBe('http://localhost:5260');
    expect(config.logLevel).toBe('info');
    expect(config.heartbeatIntervalMs).toBe(10_000);
    expect(config.driftCheckIntervalMs).toBe(60_000);
    expect(config.agentEndpoint).toBe('localhost:5263');
    expect(config.workerBacklogHoldMaxMs).toBe(600_000);
    expect(new AppConfig({ WORKER_BACKLOG_HOLD_MAX: '0' }).workerBacklogHoldMaxMs).toBe(0);
  });

  it('parses given values', () => {
    const config = new AppConfig({
      PORT: '8080',
      DATABASE_URL: 'postgresql://u:p@db:5432/so',
      PUBLIC_URL: 'https://so.example.com/',
      LOG_LEVEL: 'DEBUG',
      HEARTBEAT_INTERVAL: '2s',
      DRIFT_CHECK_INTERVAL: '5m',
      AGENT_PORT: '7000',
    });
    expect(config.port).toBe(8080);
    expect(config.databaseUrl).toBe('postgresql://u:p@db:5432/so');
    expect(config.publicUrl).toBe('https://so.example.com');
    expect(config.logLevel).toBe('debug');
    expect(config.heartbeatIntervalMs).toBe(2000);
    expect(config.driftCheckIntervalMs).toBe(300_000);
    expect(config.agentEndpoint).toBe('so.example.com:7000');
  });

  it.each([
    ['PORT', '70000'],
    ['PORT', 'http'],
    ['AGENT_PORT', '-1'],
    ['DATABASE_URL', 'mysql://db/x'],
    ['DATABASE_URL', 'not a url'],
    ['PUBLIC_URL', 'ftp://x'],
    ['LOG_LEVEL', 'verbose'],
    ['HEARTBEAT_INTERVAL', 'often'],
    ['HEARTBEAT_INTERVAL', '10ms'],
    ['DRIFT_CHECK_INTERVAL', '100d'],
    ['DATABASE_POOL_SIZE', '0'],
  ])('names %s when it is %j', (name, value) => {
    const problems = problemsOf({ [name]: value });
    expect(problems).toHaveLength(1);
    expect(problems[0].startsWith(`${name} `)).toBe(true);
  });

  it('reports every bad variable at once', () => {
    const problems = problemsOf({ PORT: 'x', LOG_LEVEL: 'y', HEARTBEAT_INTERVAL: 'z' });
    expect(problems.map((p) => p.split(' ')[0]).sort()).toEqual(['HEARTBEAT_INTERVAL', 'LOG_LEVEL', 'PORT']);
  });

  it('never echoes a sensitive value in an error', () => {
    const problems = problemsOf({ DATABASE_URL: 'mysql://user:hunter2@db/x' });
    expect(problems[0]).not.toContain('hunter2');
    expect(problems[0]).toContain('[REDACTED]');
  });

  it('wants both bootstrap client variables or neither', () => {
    expect(problemsOf({ BOOTSTRAP_CLIENT_ID: 'admin' })[0]).toMatch(
      /BOOTSTRAP_CLIENT_ID and BOOTSTRAP_CLIENT_SECRET/,
    );
    expect(
      problemsOf({ BOOTSTRAP_CLIENT_ID: 'admin', BOOTSTRAP_CLIENT_SECRET: 's3cret-value-long-enough' }),
    ).toEqual([]);
    expect(problemsOf({ BOOTSTRAP_CLIENT_ID: 'admin', BOOTSTRAP_CLIENT_SECRET: 'short' })[0]).toMatch(
      /at least 16/,
    );
  });

  it('sanitizes sensitive values', () => {
    const config = new AppConfig({
      DATABASE_URL: 'postgres://u:pw@db/x',
      BOOTSTRAP_CLIENT_ID: 'abc',
      BOOTSTRAP_CLIENT_SECRET: 'bbbbbbbbbbbbbbbbbbbb',
      ENCRYPTION_KEY: 'k'.repeat(40),
    });
    const view = config.sanitized();
    // The host and database help a diagnosis; the password never shows.
    expect(view.DATABASE_URL).toBe('postgres://u:[REDACTED]@db/x');
    expect(view.BOOTSTRAP_CLIENT_SECRET).toBe('[REDACTED]');
    expect(view.BOOTSTRAP_CLIENT_ID).toBe('abc');
    expect(view.PORT).toBe('5260');
    expect(view.ENCRYPTION_KEY).toBe('[REDACTED]');
    expect(JSON.stringify(view)).not.toMatch(/pw@|bbbb|kkkk/);
  });

  it('redacts passwords and secret parameters of URLs, and the whole of what is not a URL', () => {
    const view = new AppConfig({
      DATABASE_URL: 'postgresql://app:p%40ss@db:5432/x?sslpassword=kp&application_name=so',
      PUBLIC_URL: 'https://user:hunter2@example.com/',
    }).sanitized();
    expect(view.DATABASE_URL).toBe(
      'postgresql://app:[REDACTED]@db:5432/x?sslpassword=[REDACTED]&application_name=so',
    );
    expect(view.PUBLIC_URL).toBe('https://user:[REDACTED]@example.com/');
    expect(redactUrl('not a url with secret')).toBe('[REDACTED]');
  });
});

describe('loadConfig', () => {
  it('reads .env, and the process environment wins', () => {
    const dir = mkdtempSync(join(tmpdir(), 'so-env-'));
    const file = join(dir, '.env');
    writeFileSync(file, 'PORT=6000\nLOG_LEVEL=warn\n# comment\n');
    const config = loadConfig({ LOG_LEVEL: 'error' }, file);
    expect(config.port).toBe(6000);
    expect(config.logLevel).toBe('error');
  });

  it('tells where each value came from: default, environment, .env, or unset', () => {
    const dir = mkdtempSync(join(tmpdir(), 'so-env-'));
    const file = join(dir, '.env');
    writeFileSync(file, 'PORT=6000\nLOG_LEVEL=warn\nENCRYPTION_KEY=' + 'e'.repeat(40) + '\n');
    const described = new Map(
      loadConfig({ LOG_LEVEL: 'error', HOST: '127.0.0.1' }, file)
        .describe()
        .map((v) => [v.name, v]),
    );
    expect(described.get('PORT')).toMatchObject({ value: '6000', source: '.env', default: '5260' });
    expect(described.get('LOG_LEVEL')).toMatchObject({ value: 'error', source: 'environment' });
    expect(described.get('HOST')).toMatchObject({ value: '127.0.0.1', source: 'environment' });
    expect(described.get('AGENT_PORT')).toMatchObject({ value: '5263', source: 'default' });
    expect(described.get('TUNNEL_SSH_HOST')).toMatchObject({ value: null, source: 'unset' });
    expect(described.get('ENCRYPTION_KEY')).toMatchObject({
      value: '[REDACTED]',
      source: '.env',
      sensitive: true,
    });
    expect(described.size).toBe(Object.keys(VARIABLES).length);
  });

  it('works without a .env file', () => {
    expect(loadConfig({}, '/nonexistent/.env').port).toBe(5260);
  });
});

describe('LOG_FORMAT', () => {
  it('defaults to pretty on a terminal and json everywhere else', () => {
    expect(new AppConfig({}).logFormat).toBe('json');
    expect(new AppConfig({}, new Set(), true).logFormat).toBe('pretty');
    expect(loadConfig({}, '/nonexistent/.env', true)).toMatchObject({
      logFormat: 'pretty',
      stdoutIsTerminal: true,
    });
    expect(loadConfig({}, '/nonexistent/.env', false)).toMatchObject({
      logFormat: 'json',
      stdoutIsTerminal: false,
    });
  });

  it('is json or pretty whatever stdout is', () => {
    expect(new AppConfig({ LOG_FORMAT: 'json' }, new Set(), true).logFormat).toBe('json');
    expect(new AppConfig({ LOG_FORMAT: 'pretty' }).logFormat).toBe('pretty');
  });

  it.each(['text', 'JSONL', 'ecs'])('%s fails at boot, naming the variable and the choices', (value) => {
    expect(() => new AppConfig({ LOG_FORMAT: value })).toThrow(
      /^invalid configuration: LOG_FORMAT must be one of json, pretty/,
    );
  });
});

describe('tunnel settings', () => {
  it('are optional until the tunnel starts, with defaults for the rest', () => {
    const config = new AppConfig({});
    expect(config.tunnel.provider).toBe('ssh');
    expect(config.tunnel.ssh.port).toBe(22);
    expect(config.tunnel.ssh.host).toBeUndefined();
    expect(config.tunnel.allowPrivateUrls).toBe(false);
    expect(config.tunnel.stunServers.length).toBeGreaterThan(0);
  });

  it('parse every given value', () => {
    const config = new AppConfig({
      TUNNEL_PROVIDER: 'cloudflared',
      TUNNEL_SSH_HOST_KEY: 'SHA256:' + 'A'.repeat(43),
      TUNNEL_SSH_REMOTE_PORT: '8080',
      TUNNEL_PUBLIC_URL: 'https://tunnel.example.com/',
      TUNNEL_BASE_DOMAIN: 'Tunnel.Example.com.',
      TUNNEL_STUN_SERVERS: '127.0.0.1:3478, [::1]:3479,stun.example.net:19302',
      TUNNEL_ALLOW_PRIVATE_URLS: 'true',
      TUNNEL_CLOUDFLARED_TOKEN: 'secret-token',
    });
    expect(config.tunnel.provider).toBe('cloudflared');
    expect(config.tunnel.ssh.remotePort).toBe(8080);
    expect(config.tunnel.publicUrl).toBe('https://tunnel.example.com');
    expect(config.tunnel.baseDomain).toBe('tunnel.example.com');
    expect(config.tunnel.stunServers).toEqual([
      { host: '127.0.0.1', port: 3478 },
      { host: '::1', port: 3479 },
      { host: 'stun.example.net', port: 19302 },
    ]);
    expect(config.tunnel.allowPrivateUrls).toBe(true);
    expect(config.sanitized().TUNNEL_CLOUDFLARED_TOKEN).toBe('[REDACTED]');
    expect(new AppConfig({ TUNNEL_STUN_SERVERS: 'none' }).tunnel.stunServers).toEqual([]);
  });

  it.each([
    ['TUNNEL_PROVIDER', 'ngrok'],
    ['TUNNEL_SSH_HOST_KEY', 'MD5:aa:bb'],
    ['TUNNEL_SSH_HOST_KEY', 'SHA256:short'],
    ['TUNNEL_SSH_PORT', '70000'],
    ['TUNNEL_PUBLIC_URL', 'ftp://x.example.com'],
    ['TUNNEL_BASE_DOMAIN', 'localhost'],
    ['TUNNEL_BASE_DOMAIN', 'bad_label.example.com'],
    ['TUNNEL_STUN_SERVERS', 'stun.example.net'],
    ['TUNNEL_STUN_SERVERS', '127.0.0.1:0'],
    ['TUNNEL_ALLOW_PRIVATE_URLS', 'maybe'],
  ])('%s=%s fails at boot, naming the variable', (name, value) => {
    expect(() => new AppConfig({ [name]: value })).toThrow(new RegExp(`^invalid configuration: ${name} `));
  });
});

describe('metric store settings', () => {
  it('have the documented defaults', () => {
    expect(new AppConfig({}).metrics).toEqual({
      retentionMs: 15 * 86_400_000,
      maxBytes: 0,
      scrapeIntervalMs: 15_000,
      outOfOrderWindowMs: 600_000,
      queryTimeoutMs: 120_000,
      queryMaxSamples: 20_000_000,
      queryMaxSeries: 10_000,
    });
  });

  it('parse durations and sizes', () => {
    const config = new AppConfig({
      METRICS_RETENTION: '3650d',
      METRICS_MAX_BYTES: '2GiB',
      METRICS_SCRAPE_INTERVAL: '5s',
      METRICS_OOO_WINDOW: '0s',
    });
    expect(config.metrics).toMatchObject({
      retentionMs: 3650 * 86_400_000,
      maxBytes: 2 * 2 ** 30,
      scrapeIntervalMs: 5000,
      outOfOrderWindowMs: 0,
    });
    expect(new AppConfig({ METRICS_MAX_BYTES: '500MB' }).metrics.maxBytes).toBe(500_000_000);
    expect(new AppConfig({ METRICS_MAX_BYTES: '1.5 kib' }).metrics.maxBytes).toBe(1536);
  });

  it.each([
    ['METRICS_RETENTION', '3651d'],
    ['METRICS_RETENTION', 'forever'],
    ['METRICS_MAX_BYTES', '-1'],
    ['METRICS_MAX_BYTES', '5 parsecs'],
    ['METRICS_SCRAPE_INTERVAL', '10ms'],
    ['METRICS_OOO_WINDOW', '2d'],
  ])('%s=%s fails at boot, naming the variable', (name, value) => {
    expect(() => new AppConfig({ [name]: value })).toThrow(new RegExp(`^invalid configuration: ${name} `));
  });
});

describe('.env.example', () => {
  it('documents every variable the service reads', () => {
    const example = readFileSync(new URL('../../../.env.example', import.meta.url), 'utf8');
    for (const name of Object.keys(VARIABLES))
      expect(example, name).toMatch(new RegExp(`^#? ?${name}=`, 'm'));
  });
});

describe('AGENT_STREAM_WINDOW', () => {
  it("is HTTP/2's default window unless set, in bytes or with a unit", () => {
    expect(new AppConfig({}).agentStreamWindow).toBe(65_535);
    expect(new AppConfig({ AGENT_STREAM_WINDOW: '16KiB' }).agentStreamWindow).toBe(16_384);
    expect(new AppConfig({ AGENT_STREAM_WINDOW: '16MiB' }).agentStreamWindow).toBe(16 * 2 ** 20);
  });

  it.each(['16383', '17MiB', '0', 'wide'])('%s fails at boot, naming the variable', (value) => {
    expect(() => new AppConfig({ AGENT_STREAM_WINDOW: value })).toThrow(
      /^invalid configuration: AGENT_STREAM_WINDOW /,
    );
  });
});

describe('AGENT_ENDPOINTS', () => {
  it('is a host:port list, empty when unset', () => {
    expect(new AppConfig({}).agentEndpoints).toEqual([]);
    expect(new AppConfig({ AGENT_ENDPOINTS: 'orch-1.example:5263, [::1]:5263' }).agentEndpoints).toEqual([
      { host: 'orch-1.example', port: 5263 },
      { host: '::1', port: 5263 },
    ]);
  });

  it.each(['orch-1.example', 'https://orch-1.example:5263', 'orch-1.example:5263,orch-2.example:0'])(
    '%s fails at boot, naming the variable',
    (value) => {
      expect(() => new AppConfig({ AGENT_ENDPOINTS: value })).toThrow(
        /^invalid configuration: AGENT_ENDPOINTS /,
      );
    },
  );
});

describe('HTTP_BODY_BUDGET and HTTP_REQUEST_TIMEOUT', () => {
  it('are 64 MiB and 60 s unless set', () => {
    const config = new AppConfig({});
    expect(config.httpBodyBudget).toBe(64 * 2 ** 20);
    expect(config.httpRequestTimeoutMs).toBe(60_000);
    expect(new AppConfig({ HTTP_BODY_BUDGET: '8MiB' }).httpBodyBudget).toBe(8 * 2 ** 20);
  });

  it.each([
    ['HTTP_BODY_BUDGET', '1KiB'],
    ['HTTP_BODY_BUDGET', '5GiB'],
    ['HTTP_REQUEST_TIMEOUT', '1s'],
    ['HTTP_REQUEST_TIMEOUT', 'forever'],
  ])('%s=%s fails at boot, naming the variable', (name, value) => {
    expect(() => new AppConfig({ [name]: value })).toThrow(new RegExp(`^invalid configuration: ${name} `));
  });
});
