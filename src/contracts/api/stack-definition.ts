// The normalized stack definition: what validation makes of a valid YAML file, what the stacks and
// jobs features store, place and send to agents, and what `GET .../stacks/:id/revisions/:revision`
// answers. Units are fixed here (cores, bytes, milliseconds) so nothing downstream parses text again.

export type RestartPolicy = 'always' | 'on-failure' | 'never';
export type DriverName = 'docker' | 'process';

export interface PortDefinition {
  /** The port the service listens on (inside the container for docker). */
  container: number;
  /** The port on the node; for the process driver always equal to `container`. */
  host: number;
  protocol: 'tcp' | 'udp';
  /**
   * The node address the port is published on (an IPv4 or IPv6 literal, `127.0.0.1` to keep it
   * local); absent: the agent's default (every interface). Docker driver only.
   */
  address?: string;
}

export interface HealthCheckDefinition {
  /**
   * `http`: GET `path` on 127.0.0.1:`port`; `command`: run `test` in the service (in its container
   * for docker, as a process beside it for the process driver), exit 0 is healthy. Stored revisions
   * from before the field are `http`: read a missing value as `http`.
   */
  type?: 'http' | 'command';
  /** HTTP path starting with `/` (`http`; `/` for `command`). */
  path: string;
  /** Node port the check connects to on 127.0.0.1 (a host port for docker); 0 for `command`. */
  port: number;
  interval_ms: number;
  /** `command`: the argument list, run without a shell (CMD-SHELL arrives as `/bin/sh -c <text>`). */
  test?: string[];
  /** How long one check may take; default min(interval, 5 s) for http, 30 s for command (Compose's). */
  timeout_ms?: number;
  /** Consecutive failures before the service is unhealthy (Compose's `retries`, default 3). */
  retries?: number;
  /** Failures in this window after a start do not count (Compose's `start_period`). */
  start_period_ms?: number;
  /** The interval during `start_period` (Compose's `start_interval`, default 5 s). */
  start_interval_ms?: number;
}

/**
 * Where a service's container (or process) gets persistent or scratch storage. `volume` with a
 * `source` is one of the stack's named volumes (StackDefinition.volumes), without one an anonymous
 * volume of the service; `bind` a host path (absolute, on the node); `tmpfs` memory.
 */
export interface VolumeMountDefinition {
  type: 'volume' | 'bind' | 'tmpfs';
  /** The named volume's name, the host path for `bind`, `''` for anonymous and tmpfs. */
  source: string;
  /** Absolute path inside the container; for the process driver, only a name (docs/compose.md). */
  target: string;
  read_only: boolean;
  /** tmpfs only: its size in bytes, 0 for the engine's default. */
  size_bytes?: number;
}

/** One of the stack's named volumes (Compose's top-level `volumes`). */
export interface StackVolumeDefinition {
  /** The name the services' mounts use (`[a-zA-Z0-9][a-zA-Z0-9_.-]*`). */
  name: string;
  /** Labels set on the engine's volume, besides ours. */
  labels: Record<string, string>;
}

/** Compose's `depends_on` conditions: when a dependant may start. */
export type StartCondition = 'service_started' | 'service_healthy' | 'service_completed_successfully';

export interface StartConditionDefinition {
  condition: StartCondition;
  /** false: a dependency that is not there (or fails) does not hold the dependant back. */
  required: boolean;
  /** Restart the dependant when this dependency is replaced. */
  restart: boolean;
}

/**
 * Container settings that only the docker driver has (from Compose's keys of the same names);
 * each absent or empty one leaves the engine's default.
 */
export interface ContainerOptionsDefinition {
  /** Replaces the image's ENTRYPOINT (`[]` with `entrypoint_set`: clears it). */
  entrypoint?: string[];
  user?: string;
  working_dir?: string;
  hostname?: string;
  labels?: Record<string, string>;
  /** More names the service answers to on the stack's network, beside its service name. */
  aliases?: string[];
  /** `host:ip` lines for /etc/hosts. */
  extra_hosts?: string[];
  stop_signal?: string;
  stop_grace_period_ms?: number;
  init?: boolean;
  read_only?: boolean;
  shm_size_bytes?: number;
  ulimits?: { name: string; soft: number; hard: number }[];
  /** Container ports exposed to the stack network without publishing (Compose's `expose`). */
  expose?: number[];
  /** Reservations count against the kit; limits are the hard caps (`resources` carries those). */
  memory_reservation_bytes?: number;
  /** `on-failure:N`: the most restarts the engine makes. */
  restart_max_retries?: number;
  /** With `resources.capped: false`, the hard limits written (Compose's limits); absent: none. */
  cpu_limit?: number;
  memory_limit_bytes?: number;
}

/**
 * Where a service exposes Prometheus metrics (the text exposition format). The process driver's
 * agent scrapes `http://127.0.0.1:<port><path>` every `interval_ms` and pushes the samples to the
 * built-in metric store; the monitoring stack's metrics store scrapes it too when it runs.
 */
export interface MetricsDefinition {
  /** The port the service serves its metrics on (process driver: a node port; docker: the container port). */
  port: number;
  /** HTTP path starting with `/`; `/metrics` by default. */
  path: string;
  interval_ms: number;
}

/** Who a generated file's deploy-time credential belongs to (docs/stack-definitions.md, "Monitoring"). */
export type FileCredential = 'metrics_writer' | 'metrics_reader';

/**
 * A file the docker driver puts into the service's container: the monitoring stack's generated
 * configuration. Never written in a definition file; the monitoring expansion adds them.
 */
export interface ServiceFileDefinition {
  /** Absolute path inside the container. */
  path: string;
  /**
   * The text. `{{orchestrator_url}}`, `{{metrics_writer_id}}` and `{{metrics_reader_id}}` are
   * filled in when a job is made (PUBLIC_URL and the stack's own OAuth clients); empty for a
   * credential file.
   */
  content: string;
  /** Unix permission bits. */
  mode: number;
  /** A credential file: its content is that client's secret, added at deploy and sealed at rest. */
  credential: FileCredential | null;
}

/** A service the orchestrator's ingress publishes as `<service>-<stack>.<base_id>.<TUNNEL_BASE_DOMAIN>`. */
export interface PublicDefinition {
  /** The node (host) port the ingress connects to on the service's worker; one of its TCP `ports`. */
  port: number;
}

export interface ServiceDefinition {
  /** DNS label: lower case letters, digits and `-`, at most 63, starts with a letter. */
  name: string;
  /** Container image (docker driver); may come with `command` as the container's arguments. */
  image: string | null;
  /** Argument list run without a shell (process driver), or the container command with `image`. */
  command: string[];
  /** Literal values or `${NAME}` references, resolved by the agent from its own environment. */
  env: Record<string, string>;
  ports: PortDefinition[];
  /**
   * What the service counts against its kit and worker, and (unless `capped` is false) the hard
   * limits it runs under. A Compose service that sets no limits is `capped: false`: it runs without
   * one, as `docker compose` runs it, and counts at its reservation (docs/compose.md). Absent: capped.
   */
  resources: { cpu: number; memory_bytes: number; capped?: boolean };
  health_check: HealthCheckDefinition | null;
  /**
   * Its metrics endpoint, or null. Stored revisions from before the field have none: read a
   * missing value as null.
   */
  metrics: MetricsDefinition | null;
  /** Published through the tunnel ingress, or null. */
  public: PublicDefinition | null;
  depends_on: string[];
  /** Worker labels the service needs (all must match). */
  placement: { labels: Record<string, string> };
  restart: RestartPolicy;
  /** `docker` when `image` is set, else `process`. */
  driver: DriverName;
  /** Where the service came from: the file, or the monitoring stack the file enabled. */
  origin: 'definition' | 'monitoring';
  /**
   * Files put into the service before it starts: the monitoring stack's generated configuration,
   * and Compose `configs`/`secrets` (ours: `files`).
   */
  files?: ServiceFileDefinition[];
  /** Storage mounted into the service; absent on revisions from before the field. */
  volumes?: VolumeMountDefinition[];
  /** Conditions on `depends_on` entries (absent: `service_started`, required). */
  start_conditions?: Record<string, StartConditionDefinition>;
  /** Docker-only container settings (Compose services). */
  container?: ContainerOptionsDefinition;
}

export interface MonitoringDefinition {
  enabled: boolean;
  metrics_store: { retention_days: number; storage_bytes: number } | null;
  dashboard: { enabled: boolean; admin_password_env: string | null } | null;
  log_store: { enabled: boolean; retention_days: number } | null;
}

export interface StackDefinition {
  name: string;
  stackkit: string;
  variant: string;
  /** In dependency order: every service comes after the ones it depends on. */
  services: ServiceDefinition[];
  monitoring: MonitoringDefinition;
  /** The stack's named volumes; absent on revisions from before the field. */
  volumes?: StackVolumeDefinition[];
  /** The format the operator wrote: our stack format or a Compose file (absent: `stack`). */
  format?: 'stack' | 'compose';
}

export type ValidationCategory =
  | 'missing_required_field'
  | 'invalid_service_name'
  | 'unsupported_stackkit'
  | 'resource_constraint'
  | 'invalid_value';

/** One problem (or warning) of a definition file. */
export interface ValidationIssue {
  /** JSON-pointer-like dotted path, e.g. `services.web.resources.memory`. */
  path: string;
  category: ValidationCategory;
  message: string;
  /** 1-based position of the offending node in the YAML source; null when there is none. */
  line: number | null;
  column: number | null;
}
