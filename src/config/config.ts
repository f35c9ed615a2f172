import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseEnv } from 'node:util';
import { parseDuration } from '../common/duration.js';

export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Thrown at boot when the environment is invalid; the message names every bad variable. */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration: ${problems.join('; ')}`);
    this.name = 'ConfigError';
  }
}

type Raw = Record<string, string | undefined>;

interface VariableSpec<T> {
  /** Default used when the variable is unset or empty. `undefined` means "unset is allowed". */
  default?: string;
  sensitive?: boolean;
  description: string;
  parse: (value: string) => T;
}

const port = (value: string): number => {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < 0 || n > 65535) throw new Error('must be a port number (0-65535)');
  return n;
};

const positiveInt =
  (min: number, max: number) =>
  (value: string): number => {
    const n = Number(value);
    if (!/^\d+$/.test(value) || n < min || n > max)
      throw new Error(`must be an integer from ${min} to ${max}`);
    return n;
  };

const duration =
  (minMs: number, maxMs: number) =>
  (value: string): number => {
    const ms = parseDuration(value);
    if (ms === undefined) throw new Error('must be a duration such as 500ms, 10s, 5m or 1h');
    if (ms < minMs || ms > maxMs) throw new Error(`must be between ${minMs} ms and ${maxMs} ms`);
    return ms;
  };

const url =
  (protocols: string[]) =>
  (value: string): string => {
    let parsed: URL;
    try {
      parsed = new URL(value);
    } catch {
      throw new Error('must be an absolute URL');
    }
    if (!protocols.includes(parsed.protocol)) throw new Error(`must use ${protocols.join(' or ')}`);
    return value;
  };

const logLevel = (value: string): LogLevel => {
  const v = value.toLowerCase();
  if (!(LOG_LEVELS as readonly string[]).includes(v))
    throw new Error(`must be one of ${LOG_LEVELS.join(', ')}`);
  return v as LogLevel;
};

const text = (value: string): string => value;

/**
 * Every variable the service reads. The single source of defaults, descriptions and the `sensitive`
 * flags that the debug bundle's redaction and `.env.example` follow.
 */
export const VARIABLES = {
  PORT: { default: '5260', description: 'HTTP API port', parse: port },
  HOST: { default: '0.0.0.0', description: 'Address the HTTP and agent listeners bind to', parse: text },
  AGENT_PORT: { default: '5263', description: 'Agent gRPC port (mutual TLS)', parse: port },
  DATABASE_URL: {
    sensitive: true,
    description: 'PostgreSQL URL; unset runs the embedded database (PGlite) under DATA_DIR',
    parse: url(['postgres:', 'postgresql:']),
  },
  DATABASE_POOL_SIZE: {
    default: '10',
    description: 'Database connection pool size',
    parse: positiveInt(1, 200),
  },
  DATA_DIR: {
    default: './data',
    description: 'Embedded database, CA material and rotated logs',
    parse: (v: string) => resolve(v),
  },
  PUBLIC_URL: {
    description: 'Public base URL of this instance (default http://localhost:PORT)',
    parse: url(['http:', 'https:']),
  },
  LOG_LEVEL: {
    default: 'info',
    description: 'Initial log level (trace, debug, info, warn, error, fatal); a stored setting wins',
    parse: logLevel,
  },
  HEARTBEAT_INTERVAL: {
    default: '10s',
    description: 'Interval agents heartbeat at',
    parse: duration(100, 3_600_000),
  },
  DRIFT_CHECK_INTERVAL: {
    default: '60s',
    description: 'Interval of the scheduled drift check',
    parse: duration(1000, 86_400_000),
  },
  BOOTSTRAP_CLIENT_ID: { description: 'Client id of the admin client created on first start', parse: text },
  BOOTSTRAP_CLIENT_SECRET: {
    sensitive: true,
    description: 'Secret of the admin client created on first start',
    parse: text,
  },
  READINESS_TIMEOUT: {
    default: '1s',
    description: 'Time the readiness probe waits for the database ping',
    parse: duration(50, 30_000),
  },
  SHUTDOWN_TIMEOUT: {
    default: '25s',
    description: 'Time requests in flight get to finish after SIGTERM',
    parse: duration(0, 300_000),
  },
  ENCRYPTION_KEY: {
    sensitive: true,
    description:
      'Key that encrypts private keys at rest (at least 32 characters); unset: generated in DATA_DIR/secrets/master.key',
    parse: (v: string) => {
      if (v.length < 32) throw new Error('must be at least 32 characters');
      return v;
    },
  },
  ACCESS_TOKEN_TTL: {
    default: '15m',
    description: 'Lifetime of access tokens',
    parse: duration(10_000, 86_400_000),
  },
  REFRESH_TOKEN_TTL: {
    default: '30d',
    description: 'Lifetime of refresh tokens',
    parse: duration(60_000, 365 * 86_400_000),
  },
  TOKEN_AUDIENCE: {
    default: 'stack-orchestrator',
    description: 'The `aud` of issued access tokens',
    parse: text,
  },
  RATE_LIMIT_REQUESTS: {
    default: '1200',
    description: 'Requests one client may make per RATE_LIMIT_WINDOW (0 turns the limit off)',
    parse: positiveInt(0, 10_000_000),
  },
  RATE_LIMIT_WINDOW: {
    default: '1m',
    description: 'Window of the per-client request limit',
    parse: duration(1000, 3_600_000),
  },
  AUTH_FAILURE_LIMIT: {
    default: '10',
    description:
      'Failed authentications of one client id from one address (IPv6: one /64) per AUTH_FAILURE_WINDOW before 429',
    parse: positiveInt(1, 100_000),
  },
  AUTH_FAILURE_ADDRESS_LIMIT: {
    default: '30',
    description:
      'Failed authentications from one address (IPv6: one /64), whatever the client id, per AUTH_FAILURE_WINDOW before 429',
    parse: positiveInt(1, 1_000_000),
  },
  AUTH_FAILURE_WINDOW: {
    default: '5m',
    description: 'Window of the failed-authentication limit',
    parse: duration(1000, 86_400_000),
  },
  WORKER_CERT_TTL: {
    default: '30d',
    description: 'Lifetime of worker certificates; agents renew at two thirds',
    parse: duration(3000, 365 * 86_400_000),
  },
  JOIN_TOKEN_TTL: {
    default: '24h',
    description: 'Default lifetime of join tokens',
    parse: duration(60_000, 365 * 86_400_000),
  },
  WORKER_DEGRADED_PERCENT: {
    default: '90',
    description: 'CPU, memory or disk use (%) at which a worker is degraded',
    parse: positiveInt(1, 100),
  },
  WORKER_UNHEALTHY_PERCENT: {
    default: '98',
    description: 'Memory or disk use (%) at which a worker is unhealthy',
    parse: positiveInt(1, 100),
  },
  CONNECTIVITY_CHECK_INTERVAL: {
    default: '5m',
    description: 'How often connected agents probe each other for the connectivity matrix',
    parse: duration(1000, 86_400_000),
  },
  JOB_TIMEOUT: {
    default: '10m',
    description: 'How long a job may run on its worker before it is stopped and failed',
    parse: duration(1000, 86_400_000),
  },
  JOB_ACK_TIMEOUT: {
    default: '30s',
    description: 'How long a dispatched job waits for its agent to confirm before it is queued again',
    parse: duration(100, 3_600_000),
  },
  JOB_MAX_ATTEMPTS: {
    default: '3',
    description: 'Dispatch attempts of a job before it fails',
    parse: positiveInt(1, 100),
  },
  SETTINGS_REFRESH_INTERVAL: {
    default: '5s',
    description: 'How often a replica re-reads runtime settings changed by another replica',
    parse: duration(100, 3_600_000),
  },
} satisfies Record<string, VariableSpec<unknown>>;

type Variables = typeof VARIABLES;
export type VariableName = keyof Variables;

/** The typed, validated configuration. The only place the environment is read. */
export class AppConfig {
  readonly port: number;
  readonly host: string;
  readonly agentPort: number;
  readonly databaseUrl: string | undefined;
  readonly databasePoolSize: number;
  readonly dataDir: string;
  readonly publicUrl: string;
  readonly logLevel: LogLevel;
  readonly heartbeatIntervalMs: number;
  readonly driftCheckIntervalMs: number;
  readonly bootstrapClientId: string | undefined;
  readonly bootstrapClientSecret: string | undefined;
  readonly readinessTimeoutMs: number;
  readonly shutdownTimeoutMs: number;
  readonly settingsRefreshIntervalMs: number;
  readonly jobTimeoutMs: number;
  readonly jobAckTimeoutMs: number;
  readonly jobMaxAttempts: number;
  readonly encryptionKey: string | undefined;
  readonly workerCertTtlMs: number;
  readonly connectivityCheckIntervalMs: number;
  readonly joinTokenTtlMs: number;
  readonly workerDegradedPercent: number;
  readonly workerUnhealthyPercent: number;
  readonly accessTokenTtlMs: number;
  readonly refreshTokenTtlMs: number;
  readonly tokenAudience: string;
  readonly rateLimitRequests: number;
  readonly rateLimitWindowMs: number;
  readonly authFailureLimit: number;
  readonly authFailureAddressLimit: number;
  readonly authFailureWindowMs: number;

  /** The raw values as read, by variable name, for the sanitized view. */
  private readonly raw: Partial<Record<VariableName, string>>;

  constructor(values: Raw = {}) {
    const problems: string[] = [];
    const raw: Partial<Record<VariableName, string>> = {};
    const read = <K extends VariableName>(name: K): ReturnType<Variables[K]['parse']> | undefined => {
      const spec: VariableSpec<unknown> = VARIABLES[name];
      const given = values[name]?.trim();
      const value = given === undefined || given === '' ? spec.default : given;
      if (value === undefined) return undefined;
      raw[name] = value;
      try {
        return spec.parse(value) as ReturnType<Variables[K]['parse']>;
      } catch (err) {
        problems.push(
          `${name} ${(err as Error).message} (got ${spec.sensitive ? '[REDACTED]' : JSON.stringify(value)})`,
        );
        return undefined;
      }
    };
    this.port = read('PORT') ?? 0;
    this.host = read('HOST') ?? '';
    this.agentPort = read('AGENT_PORT') ?? 0;
    this.databaseUrl = read('DATABASE_URL');
    this.databasePoolSize = read('DATABASE_POOL_SIZE') ?? 0;
    this.dataDir = read('DATA_DIR') ?? '';
    this.publicUrl = (read('PUBLIC_URL') ?? `http://localhost:${this.port}`).replace(/\/+$/, '');
    this.logLevel = read('LOG_LEVEL') ?? 'info';
    this.heartbeatIntervalMs = read('HEARTBEAT_INTERVAL') ?? 0;
    this.driftCheckIntervalMs = read('DRIFT_CHECK_INTERVAL') ?? 0;
    this.bootstrapClientId = read('BOOTSTRAP_CLIENT_ID');
    this.bootstrapClientSecret = read('BOOTSTRAP_CLIENT_SECRET');
    this.readinessTimeoutMs = read('READINESS_TIMEOUT') ?? 0;
    this.shutdownTimeoutMs = read('SHUTDOWN_TIMEOUT') ?? 0;
    this.settingsRefreshIntervalMs = read('SETTINGS_REFRESH_INTERVAL') ?? 0;
    this.jobTimeoutMs = read('JOB_TIMEOUT') ?? 0;
    this.jobAckTimeoutMs = read('JOB_ACK_TIMEOUT') ?? 0;
    this.jobMaxAttempts = read('JOB_MAX_ATTEMPTS') ?? 0;
    this.encryptionKey = read('ENCRYPTION_KEY');
    this.workerCertTtlMs = read('WORKER_CERT_TTL') ?? 0;
    this.connectivityCheckIntervalMs = read('CONNECTIVITY_CHECK_INTERVAL') ?? 0;
    this.joinTokenTtlMs = read('JOIN_TOKEN_TTL') ?? 0;
    this.workerDegradedPercent = read('WORKER_DEGRADED_PERCENT') ?? 0;
    this.workerUnhealthyPercent = read('WORKER_UNHEALTHY_PERCENT') ?? 0;
    this.accessTokenTtlMs = read('ACCESS_TOKEN_TTL') ?? 0;
    this.refreshTokenTtlMs = read('REFRESH_TOKEN_TTL') ?? 0;
    this.tokenAudience = read('TOKEN_AUDIENCE') ?? '';
    this.rateLimitRequests = read('RATE_LIMIT_REQUESTS') ?? 0;
    this.rateLimitWindowMs = read('RATE_LIMIT_WINDOW') ?? 0;
    this.authFailureLimit = read('AUTH_FAILURE_LIMIT') ?? 0;
    this.authFailureAddressLimit = read('AUTH_FAILURE_ADDRESS_LIMIT') ?? 0;
    this.authFailureWindowMs = read('AUTH_FAILURE_WINDOW') ?? 0;
    if ((this.bootstrapClientId === undefined) !== (this.bootstrapClientSecret === undefined)) {
      problems.push('BOOTSTRAP_CLIENT_ID and BOOTSTRAP_CLIENT_SECRET must be set together');
    }
    if (this.bootstrapClientSecret !== undefined && this.bootstrapClientSecret.length < 16) {
      problems.push('BOOTSTRAP_CLIENT_SECRET must be at least 16 characters');
    }
    if (this.bootstrapClientId !== undefined && !/^[A-Za-z0-9._-]{3,64}$/.test(this.bootstrapClientId)) {
      problems.push('BOOTSTRAP_CLIENT_ID must be 3-64 characters of letters, digits, ".", "_" and "-"');
    }
    if (problems.length > 0) throw new ConfigError(problems);
    this.raw = raw;
  }

  /** Host and port agents dial, derived from PUBLIC_URL's host and AGENT_PORT. */
  get agentEndpoint(): string {
    return `${new URL(this.publicUrl).hostname}:${this.agentPort}`;
  }

  /** Every variable with its effective value; sensitive ones replaced by "[REDACTED]". */
  sanitized(): Record<string, string | null> {
    const out: Record<string, string | null> = {};
    for (const name of Object.keys(VARIABLES) as VariableName[]) {
      const spec: VariableSpec<unknown> = VARIABLES[name];
      const value = this.raw[name];
      out[name] = value === undefined ? null : spec.sensitive ? '[REDACTED]' : value;
    }
    return out;
  }
}

/**
 * Reads the environment: `process.env` wins over a `.env` file in the working directory.
 * This is the only function in the service that touches `process.env`.
 */
export function loadConfig(env: Raw = process.env, envFile = resolve('.env')): AppConfig {
  let fromFile: Raw = {};
  if (existsSync(envFile)) fromFile = parseEnv(readFileSync(envFile, 'utf8'));
  return new AppConfig({ ...fromFile, ...env });
}
