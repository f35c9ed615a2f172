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
  /** HTTP path starting with `/`. */
  path: string;
  /** Node port the check connects to on 127.0.0.1 (a host port for docker). */
  port: number;
  interval_ms: number;
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
  resources: { cpu: number; memory_bytes: number };
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
  /** Present on monitoring services with generated configuration. */
  files?: ServiceFileDefinition[];
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
