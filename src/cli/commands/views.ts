// The shapes of the service's answers that stackctl reads (its own copy: the CLI imports no server
// code), and the guards that check an answer has that shape before it is printed.
import { ApiError } from '../api.js';

/** The shapes of the service's answers that stackctl reads (its own copy: no server code here). */
export interface ClientView {
  client_id: string;
  name: string;
  owner: string;
  scopes: string[];
  disabled: boolean;
  created_at: string;
  last_used_at: string | null;
}

export interface CreatedClient extends ClientView {
  client_secret: string;
}

export interface KeyView {
  kid: string;
  alg: string;
  status: string;
  created_at: string;
  publish_until: string | null;
}

export interface JoinTokenView {
  id: string;
  pre_approved: boolean;
  labels: Record<string, string>;
  created_at: string;
  expires_at: string;
  revoked_at: string | null;
  expired: boolean;
  uses: number;
}

export interface CreatedJoinToken {
  token: string;
  id: string;
  expires_at: string;
  pre_approved: boolean;
  labels: Record<string, string>;
}

export interface WorkerView {
  id: string;
  name: string;
  status: string;
  last_heartbeat: string | null;
  metrics: { cpu_percent: number; memory_percent: number; disk_percent: number } | null;
  connected: boolean;
}

export interface StackView {
  id: string;
  name: string;
  status: string;
  stackkit: string;
  variant: string;
  revision: number;
  deployed_revision: number | null;
  worker_id: string | null;
  services: string[];
  created_at: string;
  updated_at: string;
}

export interface ValidationIssue {
  path: string;
  category: string;
  message: string;
  line: number | null;
  column: number | null;
}

export interface ValidationSummary {
  valid: true;
  stackkit: string;
  variant: string;
  services: string[];
  warnings: ValidationIssue[];
}

export interface ServiceHealthView {
  name: string;
  status: string;
  uptime: string;
  health_check?: { url: string; status_code: number; latency_ms: number };
}

export interface StackHealthView {
  stack_id: string;
  overall: string;
  services: ServiceHealthView[];
  worker_id: string | null;
  reported_at: string | null;
}

export interface JobResult {
  name: string;
  action: string;
  ok: boolean;
  error: string | null;
}

export interface JobView {
  id: string;
  type: string;
  stack_id: string;
  stack_name: string;
  revision: number;
  worker_id: string | null;
  status: string;
  progress: number;
  attempts: number;
  max_attempts: number;
  error: string | null;
  results: JobResult[] | null;
  created_at: string;
  dispatched_at: string | null;
  started_at: string | null;
  finished_at: string | null;
}

export interface JobLogLine {
  time: string;
  line: string;
}

export interface JobLogPage {
  job_id: string;
  lines: JobLogLine[];
  next_after: number;
  complete: boolean;
}

export interface JobCleanup {
  job: JobView;
  worker_notified: boolean;
}

export interface DriftItemView {
  resource: string;
  kind: string;
  worker_id: string | null;
  field: string | null;
  desired: string | null;
  actual: string | null;
  ignored: boolean;
  detected_at: string;
  last_seen: string;
}

export interface DriftView {
  stack_id: string;
  status: string;
  checked_at: string | null;
  revision: number;
  items: DriftItemView[];
  ignored_resources: string[];
}

export interface DriftResolve {
  job_id: string;
  job: JobView;
}

/** The 400 invalid_yaml or 422 validation_failed answer to a definition file. */
export const isDefinitionProblem = (err: unknown): err is ApiError =>
  err instanceof ApiError &&
  ((err.status === 400 && err.code === 'invalid_yaml') ||
    (err.status === 422 && err.code === 'validation_failed'));

export const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

export function isClient(value: unknown): value is ClientView & Record<string, unknown> {
  return (
    isObject(value) &&
    typeof value.client_id === 'string' &&
    typeof value.name === 'string' &&
    typeof value.owner === 'string' &&
    Array.isArray(value.scopes) &&
    value.scopes.every((s) => typeof s === 'string') &&
    typeof value.disabled === 'boolean' &&
    typeof value.created_at === 'string'
  );
}

export const isCreatedClient = (value: unknown): value is CreatedClient =>
  isClient(value) && typeof value.client_secret === 'string';

export function isKey(value: unknown): value is KeyView {
  return (
    isObject(value) &&
    typeof value.kid === 'string' &&
    typeof value.alg === 'string' &&
    typeof value.status === 'string' &&
    typeof value.created_at === 'string' &&
    (value.publish_until === null || typeof value.publish_until === 'string')
  );
}

export const isLabels = (value: unknown): value is Record<string, string> =>
  isObject(value) && Object.values(value).every((v) => typeof v === 'string');

export function isCreatedJoinToken(value: unknown): value is CreatedJoinToken {
  return (
    isObject(value) &&
    typeof value.token === 'string' &&
    typeof value.id === 'string' &&
    typeof value.expires_at === 'string' &&
    typeof value.pre_approved === 'boolean' &&
    isLabels(value.labels)
  );
}

export function isJoinToken(value: unknown): value is JoinTokenView {
  return (
    isObject(value) &&
    typeof value.id === 'string' &&
    typeof value.pre_approved === 'boolean' &&
    isLabels(value.labels) &&
    typeof value.created_at === 'string' &&
    typeof value.expires_at === 'string' &&
    (value.revoked_at === null || typeof value.revoked_at === 'string') &&
    typeof value.expired === 'boolean' &&
    typeof value.uses === 'number'
  );
}

export function isWorker(value: unknown): value is WorkerView {
  if (
    !isObject(value) ||
    typeof value.id !== 'string' ||
    typeof value.name !== 'string' ||
    typeof value.status !== 'string' ||
    (value.last_heartbeat !== null && typeof value.last_heartbeat !== 'string') ||
    typeof value.connected !== 'boolean'
  )
    return false;
  const metrics = value.metrics;
  return (
    metrics === null ||
    (isObject(metrics) &&
      typeof metrics.cpu_percent === 'number' &&
      typeof metrics.memory_percent === 'number' &&
      typeof metrics.disk_percent === 'number')
  );
}

export const isString = (value: unknown): value is string => typeof value === 'string';
export const isStringOrNull = (value: unknown): value is string | null => value === null || isString(value);
export const isStrings = (value: unknown): value is string[] => Array.isArray(value) && value.every(isString);
export const isInteger = (value: unknown): value is number =>
  typeof value === 'number' && Number.isInteger(value);

export function isStack(value: unknown): value is StackView {
  return (
    isObject(value) &&
    isString(value.id) &&
    isString(value.name) &&
    isString(value.status) &&
    isString(value.stackkit) &&
    isString(value.variant) &&
    isInteger(value.revision) &&
    (value.deployed_revision === null || isInteger(value.deployed_revision)) &&
    isStringOrNull(value.worker_id) &&
    isStrings(value.services) &&
    isString(value.created_at) &&
    isString(value.updated_at)
  );
}

export function isValidationIssue(value: unknown): value is ValidationIssue {
  return (
    isObject(value) &&
    isString(value.path) &&
    isString(value.category) &&
    isString(value.message) &&
    (value.line === null || isInteger(value.line)) &&
    (value.column === null || isInteger(value.column))
  );
}

export function isValidationSummary(value: unknown): value is ValidationSummary {
  return (
    isObject(value) &&
    value.valid === true &&
    isString(value.stackkit) &&
    isString(value.variant) &&
    isStrings(value.services) &&
    Array.isArray(value.warnings) &&
    value.warnings.every(isValidationIssue)
  );
}

export function isServiceHealth(value: unknown): value is ServiceHealthView {
  if (!isObject(value) || !isString(value.name) || !isString(value.status) || !isString(value.uptime))
    return false;
  const check = value.health_check;
  return (
    check === undefined ||
    (isObject(check) &&
      isString(check.url) &&
      typeof check.status_code === 'number' &&
      typeof check.latency_ms === 'number')
  );
}

export function isStackHealth(value: unknown): value is StackHealthView {
  return (
    isObject(value) &&
    isString(value.stack_id) &&
    isString(value.overall) &&
    Array.isArray(value.services) &&
    value.services.every(isServiceHealth) &&
    isStringOrNull(value.worker_id) &&
    isStringOrNull(value.reported_at)
  );
}

export function isJobResult(value: unknown): value is JobResult {
  return (
    isObject(value) &&
    isString(value.name) &&
    isString(value.action) &&
    typeof value.ok === 'boolean' &&
    isStringOrNull(value.error)
  );
}

export function isJob(value: unknown): value is JobView {
  return (
    isObject(value) &&
    isString(value.id) &&
    isString(value.type) &&
    isString(value.stack_id) &&
    isString(value.stack_name) &&
    isInteger(value.revision) &&
    isStringOrNull(value.worker_id) &&
    isString(value.status) &&
    typeof value.progress === 'number' &&
    isInteger(value.attempts) &&
    isInteger(value.max_attempts) &&
    isStringOrNull(value.error) &&
    (value.results === null || (Array.isArray(value.results) && value.results.every(isJobResult))) &&
    isString(value.created_at) &&
    isStringOrNull(value.dispatched_at) &&
    isStringOrNull(value.started_at) &&
    isStringOrNull(value.finished_at)
  );
}

export function isLogPage(value: unknown): value is JobLogPage {
  return (
    isObject(value) &&
    isString(value.job_id) &&
    Array.isArray(value.lines) &&
    value.lines.every((l) => isObject(l) && isString(l.time) && isString(l.line)) &&
    isInteger(value.next_after) &&
    typeof value.complete === 'boolean'
  );
}

export const isJobCleanup = (value: unknown): value is JobCleanup =>
  isObject(value) && isJob(value.job) && typeof value.worker_notified === 'boolean';

export function isDriftItem(value: unknown): value is DriftItemView {
  return (
    isObject(value) &&
    isString(value.resource) &&
    isString(value.kind) &&
    isStringOrNull(value.worker_id) &&
    isStringOrNull(value.field) &&
    isStringOrNull(value.desired) &&
    isStringOrNull(value.actual) &&
    typeof value.ignored === 'boolean' &&
    isString(value.detected_at) &&
    isString(value.last_seen)
  );
}

export function isDrift(value: unknown): value is DriftView {
  return (
    isObject(value) &&
    isString(value.stack_id) &&
    isString(value.status) &&
    isStringOrNull(value.checked_at) &&
    isInteger(value.revision) &&
    Array.isArray(value.items) &&
    value.items.every(isDriftItem) &&
    isStrings(value.ignored_resources)
  );
}

export const isDriftResolve = (value: unknown): value is DriftResolve =>
  isObject(value) && isString(value.job_id) && isJob(value.job);
