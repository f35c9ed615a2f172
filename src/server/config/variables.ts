import { resolve } from 'node:path';
import {
  boolean,
  byteSize,
  byteSizeIn,
  domainName,
  duration,
  hostPortList,
  logLevel,
  oneOf,
  port,
  positiveInt,
  sshFingerprint,
  redactUrl,
  text,
  url,
  type VariableSpec,
} from './parsers.js';
import { getCatalog, kitNames } from '../stacks/catalog/catalog.js';

/**
 * Every variable the service reads. The single source of defaults, descriptions and the `sensitive`
 * flags that the debug bundle's redaction and `.env.example` follow.
 */
export const VARIABLES = {
  PORT: { default: '5260', description: 'HTTP API port', parse: port },
  HOST: { default: '0.0.0.0', description: 'Address the HTTP and agent listeners bind to', parse: text },
  AGENT_PORT: { default: '5263', description: 'Agent gRPC port (mutual TLS)', parse: port },
  AGENT_ENDPOINTS: {
    description:
      'Agent endpoints (host:port, comma-separated) the install command gives agents: one per replica, or a name that resolves to every replica; each host is also named in the agent port certificate',
    parse: hostPortList,
  },
  AGENT_HELLO_CONCURRENCY: {
    default: '64',
    description:
      'Agent hellos the gateway processes at once (their database reads and session claims are gathered into shared statements); the rest wait in order, and one whose agent gave up is skipped',
    parse: positiveInt(1, 1000),
  },
  AGENT_CONNECT_CONCURRENCY: {
    default: '64',
    description:
      'Agent connections the gateway takes from accept to welcome at once (TLS handshake, HTTP/2, hello); the rest wait accepted, in order',
    parse: positiveInt(1, 10000),
  },
  AGENT_STREAM_WINDOW: {
    default: '65535',
    description:
      "HTTP/2 flow-control window of each agent's streams (16KiB to 16MiB; HTTP/2's default): what an agent may send before the gateway has read it. An agent that has uploaded a burst (scrapes, service output) holds about 40 KiB less of the control plane's memory with 16KiB (108-118 against 153-168 KiB after a 256 KiB upload), but its uploads go at most one window per round trip: keep the default where agents are far away",
    parse: byteSizeIn(16 * 1024, 16 * 2 ** 20, 'from 16KiB to 16MiB'),
  },
  DATABASE_URL: {
    sensitive: true,
    redact: redactUrl,
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
    redact: redactUrl,
  },
  LOG_LEVEL: {
    default: 'info',
    description: 'Initial log level (trace, debug, info, warn, error, fatal); a stored setting wins',
    parse: logLevel,
  },
  LOG_FORMAT: {
    description:
      'Log lines on stdout: json (one object per line) or pretty (readable, one line each, coloured on a terminal); unset: pretty when stdout is a terminal, else json. Files under DATA_DIR/logs are always JSON',
    parse: oneOf('json', 'pretty'),
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
  DEFAULT_STACKKIT: {
    default: 'basement-kit',
    description:
      'Stack kit of a Compose file that names none (neither ?stackkit= nor x-stackkit); a kit of the catalogue',
    parse: oneOf(...kitNames(getCatalog())),
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
  HTTP_BODY_BUDGET: {
    default: '64MiB',
    description:
      'Request bodies the HTTP port reads at once, by their declared size (a chunked or compressed body counts as the 1 MiB body limit); past it a request with a body gets 503 with Retry-After, so clients that send bodies slowly cannot make the service hold unbounded memory (1MiB to 4GiB)',
    parse: byteSizeIn(2 ** 20, 4 * 2 ** 30, 'from 1MiB to 4GiB'),
  },
  HTTP_REQUEST_TIMEOUT: {
    default: '60s',
    description:
      "How long a client may take to send a whole request, headers and body (Node's default is 5 minutes); past it the connection gets 408 and is closed. Responses (a followed log) are not bounded by it",
    parse: duration(5_000, 3_600_000),
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
  WORKER_BACKLOG_HOLD_MAX: {
    default: '10m',
    description:
      'Longest the unreachable sweep holds off while agents wait for admission on some replica (a reconnect storm); past it silent workers are judged again though agents still wait. 0: never hold off',
    parse: duration(0, 86_400_000),
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
  MEMORY_TRIM_INTERVAL: {
    default: '30s',
    description:
      "How often the service gives the allocator's free memory back to the system (glibc malloc_trim, through the native addon built with the service); 0: never",
    parse: duration(0, 86_400_000),
  },
  EMBEDDED_VACUUM_INTERVAL: {
    default: '10s',
    description:
      'How often the embedded database (no DATABASE_URL) is checked for tables autovacuum would vacuum or analyze, and those are; 0: never (tables then bloat and plans degrade)',
    parse: duration(0, 86_400_000),
  },
  SETTINGS_REFRESH_INTERVAL: {
    default: '5s',
    description: 'How often a replica re-reads runtime settings changed by another replica',
    parse: duration(100, 3_600_000),
  },
  TUNNEL_PROVIDER: {
    default: 'ssh',
    description: 'Tunnel provider: ssh (reverse SSH tunnel to a relay you control) or cloudflared',
    parse: oneOf('ssh', 'cloudflared'),
  },
  TUNNEL_SSH_HOST: { description: 'Relay host the ssh tunnel connects to', parse: text },
  TUNNEL_SSH_PORT: { default: '22', description: 'SSH port of the relay', parse: port },
  TUNNEL_SSH_USER: { description: 'User on the relay', parse: text },
  TUNNEL_SSH_KEY_FILE: {
    description:
      'OpenSSH private key the tunnel authenticates with (the file is read at start, never logged)',
    parse: (v: string) => resolve(v),
  },
  TUNNEL_SSH_HOST_KEY: {
    description: "The relay's host key fingerprint as ssh-keygen -lf prints it (SHA256:...); required",
    parse: sshFingerprint,
  },
  TUNNEL_SSH_REMOTE_PORT: {
    description: "Port on the relay forwarded to this instance's HTTP port",
    parse: port,
  },
  TUNNEL_SSH_AGENT_REMOTE_PORT: {
    description: "Port on the relay forwarded to this instance's agent port (mutual TLS passes through)",
    parse: port,
  },
  TUNNEL_SSH_BIND_ADDRESS: {
    description: 'Address the relay binds the forwarded ports to (empty: all, needs GatewayPorts)',
    parse: text,
  },
  TUNNEL_PUBLIC_URL: {
    description: 'Where the relay exposes the forwarded HTTP port, e.g. https://tunnel.example.com',
    parse: url(['http:', 'https:']),
    redact: redactUrl,
  },
  TUNNEL_AGENT_HOST: {
    description: 'Host agents dial through the tunnel (default: TUNNEL_SSH_HOST)',
    parse: text,
  },
  TUNNEL_BASE_DOMAIN: {
    description: 'Domain under which owners get base subdomains for published stack services',
    parse: domainName,
  },
  TUNNEL_STUN_SERVERS: {
    default: 'stun.cloudflare.com:3478,stun.l.google.com:19302',
    description:
      'STUN servers (host:port, comma-separated, or none) the topology asks for the public address',
    parse: hostPortList,
  },
  TUNNEL_ALLOW_PRIVATE_URLS: {
    default: 'false',
    description: 'Let validate-url accept private, loopback and link-local targets (never cloud metadata)',
    parse: boolean,
  },
  TUNNEL_CLOUDFLARED_TOKEN: {
    sensitive: true,
    description: 'Token of a named cloudflared tunnel; unset runs a quick tunnel',
    parse: text,
  },
  TUNNEL_CLOUDFLARED_BIN: {
    default: 'cloudflared',
    description: 'The cloudflared executable (looked up on PATH)',
    parse: text,
  },
  METRICS_RETENTION: {
    default: '15d',
    description: 'How long the metric store keeps samples (up to 3650d); older ones are deleted',
    parse: duration(3_600_000, 3650 * 86_400_000),
  },
  METRICS_MAX_BYTES: {
    default: '0',
    description: 'Size cap of the metric store on disk (500MB, 2GiB; 0: none); the oldest data goes first',
    parse: byteSize,
  },
  METRICS_SCRAPE_INTERVAL: {
    default: '15s',
    description: 'How often each replica stores its own /metrics in the metric store',
    parse: duration(1000, 3_600_000),
  },
  METRICS_QUERY_TIMEOUT: {
    default: '2m',
    description: 'Longest a PromQL query may run; a query parameter timeout only shortens it',
    parse: duration(100, 3_600_000),
  },
  METRICS_QUERY_MAX_SAMPLES: {
    default: '20000000',
    description: 'Samples one PromQL query may load (about 30 bytes each at the peak)',
    parse: positiveInt(1000, 500_000_000),
  },
  METRICS_QUERY_MAX_SERIES: {
    default: '10000',
    description: 'Series one PromQL query may answer',
    parse: positiveInt(1, 10_000_000),
  },
  METRICS_OOO_WINDOW: {
    default: '10m',
    description: "Samples older than their series' newest by more than this are dropped and counted",
    parse: duration(0, 86_400_000),
  },
  DEBUG_BUNDLE_LOG_MAX_BYTES: {
    default: '50MB',
    description:
      'Size cap of the logs in a debug bundle (10MB, 1GiB); the newest lines of the last 24 hours are kept',
    parse: byteSizeIn(1, Number.MAX_SAFE_INTEGER, 'at least 1 byte'),
  },
} satisfies Record<string, VariableSpec<unknown>>;
