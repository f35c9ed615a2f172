// What stackctl reads of the service's answers, and the guards that check an answer has it before it
// is printed. The shapes are the service's own (src/contracts/api, which the service's controllers
// return): a guard claims only the fields it checks, and tsc holds each guard to its claim (see
// `shape`). The service's closed sets of words (statuses, kinds, scopes) are read as any string, so
// an answer with a word this stackctl does not know yet is printed, not refused.
import type * as api from '../../contracts/api/index.js';
import { ApiError } from '../http.js';

type Guard<T> = (value: unknown) => value is T;

/** T as stackctl reads it: every union of string literals (a status, a kind, a scope) is a string. */
export type Read<T> = T extends string
  ? string
  : T extends readonly (infer U)[]
    ? Read<U>[]
    : T extends object
      ? { [K in keyof T]: Read<T[K]> }
      : T;

/** A guard for every field of T, each accepting no more than the field's type. */
type Fields<T> = { [K in keyof T]-?: Guard<T[K]> };

/** An object whose fields pass their guards; other fields are not looked at. */
function shape<T>(fields: Fields<T>): Guard<T> {
  const checks = Object.entries<Guard<unknown>>(fields);
  return (value): value is T => isObject(value) && checks.every(([name, check]) => check(value[name]));
}

export const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);
const isString = (value: unknown): value is string => typeof value === 'string';
const isBoolean = (value: unknown): value is boolean => typeof value === 'boolean';
const isNumber = (value: unknown): value is number => typeof value === 'number';
const isInteger = (value: unknown): value is number => isNumber(value) && Number.isInteger(value);
const isTrue = (value: unknown): value is true => value === true;
const nullable =
  <T>(check: Guard<T>): Guard<T | null> =>
  (value): value is T | null =>
    value === null || check(value);
const optional =
  <T>(check: Guard<T>): Guard<T | undefined> =>
  (value): value is T | undefined =>
    value === undefined || check(value);
const arrayOf =
  <T>(check: Guard<T>): Guard<T[]> =>
  (value): value is T[] =>
    Array.isArray(value) && value.every(check);
const isStrings = arrayOf(isString);
const isLabels = (value: unknown): value is Record<string, string> =>
  isObject(value) && Object.values(value).every(isString);

/** The 400 invalid_yaml or 422 validation_failed answer to a definition file. */
export const isDefinitionProblem = (err: unknown): err is ApiError =>
  err instanceof ApiError &&
  ((err.status === 400 && err.code === 'invalid_yaml') ||
    (err.status === 422 && err.code === 'validation_failed'));

type Client = Read<
  Pick<api.ClientView, 'client_id' | 'name' | 'owner' | 'scopes' | 'disabled' | 'created_at'>
>;
const clientFields: Fields<Client> = {
  client_id: isString,
  name: isString,
  owner: isString,
  scopes: isStrings,
  disabled: isBoolean,
  created_at: isString,
};
export const isClient = shape<Client>(clientFields);
export const isCreatedClient = shape<Client & Read<Pick<api.CreatedClient, 'client_secret'>>>({
  ...clientFields,
  client_secret: isString,
});

const isKey = shape<Read<api.KeyView>>({
  kid: isString,
  alg: isString,
  status: isString,
  created_at: isString,
  publish_until: nullable(isString),
});
export const isKeyList = shape<Read<api.KeyList>>({ keys: arrayOf(isKey) });
export const isKeyRotation = shape<Read<api.KeyRotation>>({ kid: isString, retired: isStrings });

export const isCreatedJoinToken = shape<Read<api.CreatedJoinToken>>({
  token: isString,
  id: isString,
  expires_at: isString,
  pre_approved: isBoolean,
  labels: isLabels,
});

export const isJoinToken = shape<Read<api.JoinTokenView>>({
  id: isString,
  pre_approved: isBoolean,
  labels: isLabels,
  created_at: isString,
  expires_at: isString,
  revoked_at: nullable(isString),
  expired: isBoolean,
  uses: isNumber,
});

type WorkerMetrics = Pick<api.WorkerMetrics, 'cpu_percent' | 'memory_percent' | 'disk_percent'>;
type Worker = Read<Pick<api.WorkerView, 'id' | 'name' | 'status' | 'last_heartbeat' | 'connected'>> & {
  metrics: WorkerMetrics | null;
};
export const isWorker = shape<Worker>({
  id: isString,
  name: isString,
  status: isString,
  last_heartbeat: nullable(isString),
  connected: isBoolean,
  metrics: nullable(
    shape<WorkerMetrics>({ cpu_percent: isNumber, memory_percent: isNumber, disk_percent: isNumber }),
  ),
});

const isValidationIssue = shape<Read<api.ValidationIssue>>({
  path: isString,
  category: isString,
  message: isString,
  line: nullable(isInteger),
  column: nullable(isInteger),
});

export const isStack = shape<Read<api.StackView>>({
  id: isString,
  name: isString,
  status: isString,
  stackkit: isString,
  variant: isString,
  revision: isInteger,
  deployed_revision: nullable(isInteger),
  worker_id: nullable(isString),
  services: isStrings,
  created_at: isString,
  updated_at: isString,
  format: isString,
  warnings: optional(arrayOf(isValidationIssue)),
});

export const isValidationSummary = shape<Read<api.ValidationSummary>>({
  valid: isTrue,
  format: isString,
  stackkit: isString,
  variant: isString,
  services: isStrings,
  warnings: arrayOf(isValidationIssue),
});

type ServiceHealth = Read<api.ServiceHealthView>;
const isServiceHealth = shape<ServiceHealth>({
  name: isString,
  status: isString,
  uptime: isString,
  health_check: optional(
    shape<NonNullable<ServiceHealth['health_check']>>({
      url: isString,
      status_code: isNumber,
      latency_ms: isNumber,
    }),
  ),
});

export const isStackHealth = shape<Read<api.StackHealthView>>({
  stack_id: isString,
  overall: isString,
  services: arrayOf(isServiceHealth),
  worker_id: nullable(isString),
  reported_at: nullable(isString),
});

export type Job = Read<api.JobView>;
export const isJob = shape<Job>({
  id: isString,
  type: isString,
  stack_id: isString,
  stack_name: isString,
  revision: isInteger,
  worker_id: nullable(isString),
  status: isString,
  progress: isNumber,
  attempts: isInteger,
  max_attempts: isInteger,
  error: nullable(isString),
  results: nullable(
    arrayOf(
      shape<Read<api.JobResult>>({
        name: isString,
        action: isString,
        ok: isBoolean,
        error: nullable(isString),
      }),
    ),
  ),
  created_at: isString,
  dispatched_at: nullable(isString),
  started_at: nullable(isString),
  finished_at: nullable(isString),
});

export type LogLine = Read<api.JobLogLine>;
export const isLogPage = shape<Read<api.JobLogPage>>({
  job_id: isString,
  lines: arrayOf(shape<LogLine>({ time: isString, line: isString })),
  next_after: isInteger,
  complete: isBoolean,
});

export type StackLogLine = Read<api.StackLogLine>;
export const isStackLogLine = shape<StackLogLine>({
  time: isString,
  service: isString,
  worker_id: isString,
  stream: isString,
  line: isString,
});
export const isStackLogPage = shape<Read<api.StackLogPage>>({
  stack_id: isString,
  lines: arrayOf(isStackLogLine),
  truncated: isBoolean,
});

export const isJobCleanup = shape<Read<api.JobCleanup>>({ job: isJob, worker_notified: isBoolean });

export type Drift = Read<api.DriftView>;
export const isDrift = shape<Drift>({
  stack_id: isString,
  status: isString,
  checked_at: nullable(isString),
  revision: isInteger,
  items: arrayOf(
    shape<Read<api.DriftItemView>>({
      resource: isString,
      kind: isString,
      worker_id: nullable(isString),
      field: nullable(isString),
      desired: nullable(isString),
      actual: nullable(isString),
      ignored: isBoolean,
      detected_at: isString,
      last_seen: isString,
    }),
  ),
  ignored_resources: isStrings,
});

export const isDriftResolve = shape<Read<api.DriftResolve>>({ job_id: isString, job: isJob });

export type TunnelStatus = Read<api.TunnelStatus>;
export const isTunnelStatus = shape<TunnelStatus>({
  state: isString,
  provider: isString,
  public_url: nullable(isString),
  agent_endpoint: nullable(isString),
  started_at: nullable(isString),
  last_error: nullable(isString),
});

export const isRegistryUrl = shape<Read<api.RegistryUrl>>({ url: isString, source: isString });

export const isTopology = shape<Read<api.Topology>>({
  environment: shape<Read<api.TopologyEnvironment>>({ kind: isString, evidence: isStrings }),
  has_nat: isBoolean,
  local_ips: isStrings,
  public_ip: nullable(isString),
  default_gateway: nullable(isString),
  private_subnet: nullable(isString),
  recommended_mode: isString,
  reason: isString,
});

export const isSubdomainList = shape<Read<api.TunnelSubdomainList>>({
  subdomains: arrayOf(
    shape<Read<api.TunnelSubdomain>>({
      base_id: isString,
      subdomain: isString,
      url: isString,
      created_at: isString,
    }),
  ),
});

export const isSubdomainServices = shape<Read<api.TunnelSubdomainServices>>({
  base_id: isString,
  services: arrayOf(
    shape<Read<api.TunnelService>>({ name: isString, subdomain: isString, url: isString, target: isString }),
  ),
});

export const isUrlValidation = shape<Read<api.UrlValidation>>({
  url: nullable(isString),
  valid: isBoolean,
  reachable: isBoolean,
  checks: arrayOf(shape<Read<api.UrlCheck>>({ name: isString, ok: isBoolean, detail: isString })),
});

export const isInstallCommand = shape<Read<api.InstallCommand>>({
  linux: isString,
  windows: isString,
  registry_url: isString,
  ca_fingerprint: isString,
  expires_at: isString,
});
