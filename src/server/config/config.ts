import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseEnv } from 'node:util';
import { LOG_LEVELS, REDACTED, type HostPort, type LogLevel, type VariableSpec } from './parsers.js';
import { VARIABLES } from './variables.js';

export { LOG_LEVELS, VARIABLES, type HostPort, type LogLevel };

/** LOG_FORMAT: how stdout shows log records. */
export type LogFormat = 'json' | 'pretty';

/** The metric store's limits (docs/metrics.md). */
export interface MetricStoreSettings {
  retentionMs: number;
  /** 0: no cap. */
  maxBytes: number;
  scrapeIntervalMs: number;
  outOfOrderWindowMs: number;
  queryTimeoutMs: number;
  queryMaxSamples: number;
  queryMaxSeries: number;
}

/**
 * The tunnel's settings. Each set value is checked at boot; whether the chosen provider has all it
 * needs is checked when the tunnel starts, so an instance that never uses the tunnel needs none.
 */
export interface TunnelSettings {
  provider: 'ssh' | 'cloudflared';
  ssh: {
    host: string | undefined;
    port: number;
    user: string | undefined;
    keyFile: string | undefined;
    hostKey: string | undefined;
    remotePort: number | undefined;
    agentRemotePort: number | undefined;
    bindAddress: string;
  };
  publicUrl: string | undefined;
  agentHost: string | undefined;
  baseDomain: string | undefined;
  stunServers: HostPort[];
  allowPrivateUrls: boolean;
  cloudflared: { token: string | undefined; bin: string };
}

/** Thrown at boot when the environment is invalid; the message names every bad variable. */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration: ${problems.join('; ')}`);
    this.name = 'ConfigError';
  }
}

type Raw = Record<string, string | undefined>;

/** Where a variable's value came from: `.env` only through loadConfig, which knows the file. */
export type VariableSource = 'default' | 'environment' | '.env' | 'unset';

/** One variable as the debug bundle's config.json shows it: secrets never in the clear. */
export interface VariableView {
  name: string;
  /** The effective value; "[REDACTED]" (or a URL with its password redacted) when sensitive. */
  value: string | null;
  source: VariableSource;
  sensitive: boolean;
  default: string | null;
  description: string;
}

type Variables = typeof VARIABLES;
export type VariableName = keyof Variables;

/** The typed, validated configuration. The only place the environment is read. */
export class AppConfig {
  readonly port: number;
  readonly host: string;
  readonly agentPort: number;
  /** AGENT_ENDPOINTS: where installed agents hold their stream; empty: the endpoint enrollment advertises. */
  readonly agentEndpoints: HostPort[];
  readonly agentHelloConcurrency: number;
  readonly agentConnectConcurrency: number;
  /** AGENT_STREAM_WINDOW: the HTTP/2 stream window the agent port advertises, in bytes. */
  readonly agentStreamWindow: number;
  readonly databaseUrl: string | undefined;
  readonly databasePoolSize: number;
  readonly dataDir: string;
  readonly publicUrl: string;
  readonly logLevel: LogLevel;
  /** How stdout shows log records (LOG_FORMAT; unset: pretty on a terminal, else json). */
  readonly logFormat: LogFormat;
  /** Whether stdout was a terminal at start: pretty lines are coloured only then. */
  readonly stdoutIsTerminal: boolean;
  readonly heartbeatIntervalMs: number;
  readonly driftCheckIntervalMs: number;
  /** The stack kit of a Compose file that names none. */
  readonly defaultStackkit: string;
  readonly bootstrapClientId: string | undefined;
  readonly bootstrapClientSecret: string | undefined;
  readonly readinessTimeoutMs: number;
  readonly shutdownTimeoutMs: number;
  readonly settingsRefreshIntervalMs: number;
  /** MEMORY_TRIM_INTERVAL: how often free allocator memory is given back (0: never). */
  readonly memoryTrimIntervalMs: number;
  /** EMBEDDED_VACUUM_INTERVAL: the embedded database's autovacuum pass (0: never). */
  readonly embeddedVacuumIntervalMs: number;
  readonly jobTimeoutMs: number;
  readonly jobAckTimeoutMs: number;
  readonly jobMaxAttempts: number;
  readonly encryptionKey: string | undefined;
  readonly workerCertTtlMs: number;
  readonly connectivityCheckIntervalMs: number;
  readonly joinTokenTtlMs: number;
  readonly workerDegradedPercent: number;
  readonly workerUnhealthyPercent: number;
  /** WORKER_BACKLOG_HOLD_MAX: how long an admission backlog may hold the unreachable sweep off. */
  readonly workerBacklogHoldMaxMs: number;
  readonly accessTokenTtlMs: number;
  readonly refreshTokenTtlMs: number;
  readonly tokenAudience: string;
  readonly httpBodyBudget: number;
  readonly httpRequestTimeoutMs: number;
  readonly rateLimitRequests: number;
  readonly rateLimitWindowMs: number;
  readonly authFailureLimit: number;
  readonly authFailureAddressLimit: number;
  readonly authFailureWindowMs: number;
  readonly tunnel: TunnelSettings;
  readonly metrics: MetricStoreSettings;
  /** Variables the platform sets (not ours), read for the topology's environment detection. */
  readonly platformHints: Readonly<Record<string, string | undefined>>;
  /** The environment as started, for child processes (cloudflared) that inherit a filtered part. */
  readonly processEnvironment: Readonly<Record<string, string | undefined>>;

  readonly debugBundleLogMaxBytes: number;

  /** The raw values as read, by variable name, for the sanitized view. */
  private readonly raw: Partial<Record<VariableName, string>>;
  private readonly sources: Partial<Record<VariableName, VariableSource>>;

  /**
   * `fromEnvFile`: the names whose value came from the `.env` file rather than the environment.
   * `stdoutIsTerminal`: whether stdout is a terminal (loadConfig asks process.stdout).
   */
  constructor(values: Raw = {}, fromEnvFile: ReadonlySet<string> = new Set(), stdoutIsTerminal = false) {
    const problems: string[] = [];
    const raw: Partial<Record<VariableName, string>> = {};
    const sources: Partial<Record<VariableName, VariableSource>> = {};
    const read = <K extends VariableName>(name: K): ReturnType<Variables[K]['parse']> | undefined => {
      const spec: VariableSpec<unknown> = VARIABLES[name];
      const given = values[name]?.trim();
      const defaulted = given === undefined || given === '';
      const value = defaulted ? spec.default : given;
      if (value === undefined) return undefined;
      raw[name] = value;
      sources[name] = defaulted ? 'default' : fromEnvFile.has(name) ? '.env' : 'environment';
      try {
        return spec.parse(value) as ReturnType<Variables[K]['parse']>;
      } catch (err) {
        problems.push(
          `${name} ${(err as Error).message} (got ${spec.sensitive ? REDACTED : JSON.stringify(value)})`,
        );
        return undefined;
      }
    };
    this.port = read('PORT') ?? 0;
    this.host = read('HOST') ?? '';
    this.agentPort = read('AGENT_PORT') ?? 0;
    this.agentEndpoints = read('AGENT_ENDPOINTS') ?? [];
    this.agentHelloConcurrency = read('AGENT_HELLO_CONCURRENCY') ?? 0;
    this.agentConnectConcurrency = read('AGENT_CONNECT_CONCURRENCY') ?? 0;
    this.agentStreamWindow = read('AGENT_STREAM_WINDOW') ?? 0;
    this.databaseUrl = read('DATABASE_URL');
    this.databasePoolSize = read('DATABASE_POOL_SIZE') ?? 0;
    this.dataDir = read('DATA_DIR') ?? '';
    this.publicUrl = (read('PUBLIC_URL') ?? `http://localhost:${this.port}`).replace(/\/+$/, '');
    this.logLevel = read('LOG_LEVEL') ?? 'info';
    this.stdoutIsTerminal = stdoutIsTerminal;
    this.logFormat = read('LOG_FORMAT') ?? (stdoutIsTerminal ? 'pretty' : 'json');
    this.heartbeatIntervalMs = read('HEARTBEAT_INTERVAL') ?? 0;
    this.driftCheckIntervalMs = read('DRIFT_CHECK_INTERVAL') ?? 0;
    this.defaultStackkit = read('DEFAULT_STACKKIT') ?? 'basement-kit';
    this.bootstrapClientId = read('BOOTSTRAP_CLIENT_ID');
    this.bootstrapClientSecret = read('BOOTSTRAP_CLIENT_SECRET');
    this.readinessTimeoutMs = read('READINESS_TIMEOUT') ?? 0;
    this.shutdownTimeoutMs = read('SHUTDOWN_TIMEOUT') ?? 0;
    this.settingsRefreshIntervalMs = read('SETTINGS_REFRESH_INTERVAL') ?? 0;
    this.memoryTrimIntervalMs = read('MEMORY_TRIM_INTERVAL') ?? 0;
    this.embeddedVacuumIntervalMs = read('EMBEDDED_VACUUM_INTERVAL') ?? 0;
    this.jobTimeoutMs = read('JOB_TIMEOUT') ?? 0;
    this.jobAckTimeoutMs = read('JOB_ACK_TIMEOUT') ?? 0;
    this.jobMaxAttempts = read('JOB_MAX_ATTEMPTS') ?? 0;
    this.encryptionKey = read('ENCRYPTION_KEY');
    this.workerCertTtlMs = read('WORKER_CERT_TTL') ?? 0;
    this.connectivityCheckIntervalMs = read('CONNECTIVITY_CHECK_INTERVAL') ?? 0;
    this.joinTokenTtlMs = read('JOIN_TOKEN_TTL') ?? 0;
    this.workerDegradedPercent = read('WORKER_DEGRADED_PERCENT') ?? 0;
    this.workerUnhealthyPercent = read('WORKER_UNHEALTHY_PERCENT') ?? 0;
    this.workerBacklogHoldMaxMs = read('WORKER_BACKLOG_HOLD_MAX') ?? 0;
    this.accessTokenTtlMs = read('ACCESS_TOKEN_TTL') ?? 0;
    this.refreshTokenTtlMs = read('REFRESH_TOKEN_TTL') ?? 0;
    this.tokenAudience = read('TOKEN_AUDIENCE') ?? '';
    this.httpBodyBudget = read('HTTP_BODY_BUDGET') ?? 0;
    this.httpRequestTimeoutMs = read('HTTP_REQUEST_TIMEOUT') ?? 0;
    this.rateLimitRequests = read('RATE_LIMIT_REQUESTS') ?? 0;
    this.rateLimitWindowMs = read('RATE_LIMIT_WINDOW') ?? 0;
    this.authFailureLimit = read('AUTH_FAILURE_LIMIT') ?? 0;
    this.authFailureAddressLimit = read('AUTH_FAILURE_ADDRESS_LIMIT') ?? 0;
    this.authFailureWindowMs = read('AUTH_FAILURE_WINDOW') ?? 0;
    this.debugBundleLogMaxBytes = read('DEBUG_BUNDLE_LOG_MAX_BYTES') ?? 0;
    this.processEnvironment = Object.freeze({ ...values });
    this.platformHints = {
      KUBERNETES_SERVICE_HOST: values.KUBERNETES_SERVICE_HOST,
      container: values.container,
    };
    this.metrics = {
      retentionMs: read('METRICS_RETENTION') ?? 0,
      maxBytes: read('METRICS_MAX_BYTES') ?? 0,
      scrapeIntervalMs: read('METRICS_SCRAPE_INTERVAL') ?? 0,
      outOfOrderWindowMs: read('METRICS_OOO_WINDOW') ?? 0,
      queryTimeoutMs: read('METRICS_QUERY_TIMEOUT') ?? 0,
      queryMaxSamples: read('METRICS_QUERY_MAX_SAMPLES') ?? 0,
      queryMaxSeries: read('METRICS_QUERY_MAX_SERIES') ?? 0,
    };
    this.tunnel = {
      provider: read('TUNNEL_PROVIDER') ?? 'ssh',
      ssh: {
        host: read('TUNNEL_SSH_HOST'),
        port: read('TUNNEL_SSH_PORT') ?? 22,
        user: read('TUNNEL_SSH_USER'),
        keyFile: read('TUNNEL_SSH_KEY_FILE'),
        hostKey: read('TUNNEL_SSH_HOST_KEY'),
        remotePort: read('TUNNEL_SSH_REMOTE_PORT'),
        agentRemotePort: read('TUNNEL_SSH_AGENT_REMOTE_PORT'),
        bindAddress: read('TUNNEL_SSH_BIND_ADDRESS') ?? '',
      },
      publicUrl: read('TUNNEL_PUBLIC_URL')?.replace(/\/+$/, ''),
      agentHost: read('TUNNEL_AGENT_HOST'),
      baseDomain: read('TUNNEL_BASE_DOMAIN'),
      stunServers: read('TUNNEL_STUN_SERVERS') ?? [],
      allowPrivateUrls: read('TUNNEL_ALLOW_PRIVATE_URLS') ?? false,
      cloudflared: {
        token: read('TUNNEL_CLOUDFLARED_TOKEN'),
        bin: read('TUNNEL_CLOUDFLARED_BIN') ?? 'cloudflared',
      },
    };
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
    this.sources = sources;
  }

  /** Host and port agents dial, derived from PUBLIC_URL's host and AGENT_PORT. */
  get agentEndpoint(): string {
    return `${new URL(this.publicUrl).hostname}:${this.agentPort}`;
  }

  /** Every variable with its effective value; sensitive ones replaced by "[REDACTED]". */
  sanitized(): Record<string, string | null> {
    return Object.fromEntries(this.describe().map((v) => [v.name, v.value]));
  }

  /** Every variable with its sanitized value, its source, default and description. */
  describe(): VariableView[] {
    return (Object.keys(VARIABLES) as VariableName[]).map((name) => {
      const spec: VariableSpec<unknown> = VARIABLES[name];
      const value = this.raw[name];
      return {
        name,
        value: value === undefined ? null : sanitize(spec, value),
        source: this.sources[name] ?? 'unset',
        sensitive: spec.sensitive === true,
        default: spec.default === undefined ? null : sanitize(spec, spec.default),
        description: spec.description,
      };
    });
  }
}

function sanitize(spec: VariableSpec<unknown>, value: string): string {
  if (spec.redact) return spec.redact(value);
  return spec.sensitive ? REDACTED : value;
}

/**
 * Reads the environment: `process.env` wins over a `.env` file in the working directory.
 * This is the only function in the service that touches `process.env`.
 */
export function loadConfig(
  env: Raw = process.env,
  envFile = resolve('.env'),
  stdoutIsTerminal = process.stdout.isTTY === true,
): AppConfig {
  let fromFile: Raw = {};
  if (existsSync(envFile)) fromFile = parseEnv(readFileSync(envFile, 'utf8'));
  const fileOnly = Object.keys(fromFile).filter((name) => (env[name] ?? '').trim() === '');
  return new AppConfig({ ...fromFile, ...env }, new Set(fileOnly), stdoutIsTerminal);
}
