import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { createHmac } from 'node:crypto';
import { fileURLToPath } from 'node:url';

/** The .proto sits next to this module in src/ and is copied next to it in dist/ by the build. */
export const AGENT_PROTO_PATH = fileURLToPath(new URL('./agent.proto', import.meta.url));

const LOADER_OPTIONS: protoLoader.Options = {
  keepCase: true,
  longs: Number,
  enums: String,
  defaults: true,
  oneofs: true,
};

export interface AgentProto {
  AgentGateway: grpc.ServiceClientConstructor;
}

/** Loads the agent protocol; both the service and the agent call this. */
export function loadAgentProto(): AgentProto {
  const definition = protoLoader.loadSync(AGENT_PROTO_PATH, LOADER_OPTIONS);
  const root = grpc.loadPackageDefinition(definition) as unknown as { stack: { agent: { v1: AgentProto } } };
  return root.stack.agent.v1;
}

let connect: grpc.MethodDefinition<AgentMessage, ServerMessage> | undefined;
const connectMethod = () =>
  (connect ??= loadAgentProto().AgentGateway.service.Connect as grpc.MethodDefinition<
    AgentMessage,
    ServerMessage
  >);

/** The size of a message as the stream carries it: what grpc-js holds against the message limits. */
export function agentMessageBytes(message: AgentMessage): number {
  return connectMethod().requestSerialize(message).length;
}

/** Messages measured by `serverMessageBytes` and not sent yet, with their bytes. */
const measured = new WeakMap<ServerMessage, Buffer>();

/**
 * The size of a message the service sends. The bytes are kept with the message, so that the
 * stream's serializer (`serializeServerMessage`) does not encode it a second time: a message is
 * not changed once measured.
 */
export function serverMessageBytes(message: ServerMessage): number {
  const bytes = connectMethod().responseSerialize(message);
  measured.set(message, bytes);
  return bytes.length;
}

/** The Connect stream's serializer on the service: the bytes `serverMessageBytes` made, if any. */
export function serializeServerMessage(message: ServerMessage): Buffer {
  const bytes = measured.get(message);
  if (bytes === undefined) return connectMethod().responseSerialize(message);
  measured.delete(message);
  return bytes;
}

/**
 * The agent service's definition as the service serves it: `Connect` encodes through
 * `serializeServerMessage`.
 */
export function servedAgentGateway(proto: AgentProto): grpc.ServiceDefinition {
  const service = proto.AgentGateway.service;
  return { ...service, Connect: { ...service.Connect, responseSerialize: serializeServerMessage } };
}

// TypeScript shapes of the messages (proto-loader with keepCase, defaults and oneofs).

export interface NodeMetricsMsg {
  cpu_percent: number;
  memory_percent: number;
  disk_percent: number;
  containers_running: number;
}

export interface CheckMsg {
  name: string;
  ok: boolean;
  critical: boolean;
  detail: string;
}

export interface HelloMsg {
  worker_id: string;
  version: string;
  hostname: string;
  driver: string;
  probe_address: string;
  cpu_cores: number;
  memory_bytes: number;
  active_job_ids: string[];
  probe_port: number;
  /** Absent from older agents: none. */
  allowed_host_paths?: string[];
}

export interface HeartbeatMsg {
  sequence: number;
  metrics: NodeMetricsMsg | null;
  checks: CheckMsg[];
}

export interface ProbeTargetMsg {
  worker_id: string;
  address: string;
  challenge: string;
  answer: string;
}

export interface ProbeRequestMsg {
  probe_id: string;
  targets: ProbeTargetMsg[];
  timeout_ms: number;
}

export interface ProbeResultMsg {
  worker_id: string;
  reachable: boolean;
  rtt_ms: number;
  /** Deprecated: always empty. */
  error: string;
}

export interface ConnectivityReportMsg {
  probe_id: string;
  results: ProbeResultMsg[];
}

export interface PortSpecMsg {
  container: number;
  host: number;
  protocol: string;
  /** The node address to publish on; empty or absent: the agent's default. */
  address?: string;
}

export interface HealthCheckSpecMsg {
  path: string;
  port: number;
  interval_ms: number;
  /** Absent from older services: `http`. */
  type?: string;
  test?: string[];
  timeout_ms?: number;
  retries?: number;
  start_period_ms?: number;
  start_interval_ms?: number;
}

export interface MetricsSpecMsg {
  /** The node port the agent scrapes on 127.0.0.1; 0 when it does not scrape. */
  port: number;
  path: string;
  interval_ms: number;
}

export interface ServiceSpecMsg {
  name: string;
  image: string;
  command: string[];
  env: Record<string, string>;
  ports: PortSpecMsg[];
  cpu: number;
  memory_bytes: number;
  restart: string;
  health_check: HealthCheckSpecMsg | null;
  digest: string;
  /** Absent from older services; null when the service has no metrics endpoint. */
  metrics?: MetricsSpecMsg | null;
  /** Absent from older services (and from specs built before files existed): none. */
  files?: ServiceFileMsg[];
  /** Absent from older services: none. */
  volumes?: VolumeMountMsg[];
  /** Absent from older services: every dependency is `service_started`, required. */
  start_conditions?: StartConditionMsg[];
  /** Absent (or null) from services that set none. */
  container?: ContainerOptionsMsg | null;
}

export interface VolumeMountMsg {
  type: string;
  source: string;
  target: string;
  read_only: boolean;
  size_bytes: number;
}

export interface StartConditionMsg {
  service: string;
  condition: string;
  required: boolean;
  restart: boolean;
}

export interface ContainerOptionsMsg {
  entrypoint: string[];
  entrypoint_set: boolean;
  user: string;
  working_dir: string;
  hostname: string;
  labels: Record<string, string>;
  aliases: string[];
  extra_hosts: string[];
  stop_signal: string;
  stop_grace_period_ms: number;
  init: boolean;
  read_only: boolean;
  shm_size_bytes: number;
  ulimits: { name: string; soft: number; hard: number }[];
  expose: number[];
  memory_reservation_bytes: number;
  restart_max_retries: number;
  /** true: cpu and memory_bytes only count; the hard limits are cpu_limit and memory_limit_bytes (0: none). */
  uncapped: boolean;
  cpu_limit: number;
  memory_limit_bytes: number;
}

export interface ServiceFileMsg {
  path: string;
  content: string;
  mode: number;
}

export type JobCommandType = 'provision' | 'destroy';

export interface JobCommandMsg {
  job_id: string;
  type: string;
  stack_id: string;
  stack_name: string;
  revision: number;
  services: ServiceSpecMsg[];
  timeout_ms: number;
  attempt: number;
  keep: string[];
  replace: string[];
  /** Empty or absent: the stack's output is not shipped. */
  log_push_url?: string;
  /** destroy only: remove the stack's volumes too. */
  delete_volumes?: boolean;
  /** 12 hex digits the stack's volumes are named by; empty or absent: the stack id's. */
  volume_scope?: string;
}

export interface CancelJobMsg {
  job_id: string;
  cleanup: boolean;
}

export interface ServiceResultMsg {
  name: string;
  action: string;
  ok: boolean;
  error: string;
}

export type JobPhase = 'accepted' | 'progress' | 'succeeded' | 'failed' | 'cancelled' | 'cleaned';

export interface JobEventMsg {
  job_id: string;
  phase: string;
  progress: number;
  lines: string[];
  error: string;
  results: ServiceResultMsg[];
}

export interface HealthResultMsg {
  url: string;
  status_code: number;
  latency_ms: number;
  ok: boolean;
  error: string;
  checked_at: string;
}

export interface EffectiveConfigMsg {
  image: string;
  command: string[];
  env: Record<string, string>;
  ports: PortSpecMsg[];
  cpu: number;
  memory_bytes: number;
  /** `command` and `env` were left out of the report; the digests stand for them (config-digest.ts). */
  trimmed?: boolean;
  command_digest?: string;
  env_digest?: string;
}

export interface ServiceStateMsg {
  stack_id: string;
  name: string;
  status: string;
  running: boolean;
  started_at: string;
  digest: string;
  restarts: number;
  exit_code: number;
  health: HealthResultMsg | null;
  actual: EffectiveConfigMsg | null;
  desired: boolean;
}

export interface StateReportMsg {
  services: ServiceStateMsg[];
  stack_ids: string[];
  last_jobs: Record<string, string>;
}

export interface LabelMsg {
  name: string;
  value: string;
}

export interface MetricSampleMsg {
  labels: LabelMsg[];
  value: number;
  /** 0: the scrape's time. */
  timestamp_ms: number;
}

export interface ScrapeReportMsg {
  stack_id: string;
  service: string;
  timestamp_ms: number;
  samples: MetricSampleMsg[];
  last: boolean;
  up: boolean;
  duration_seconds: number;
  samples_scraped: number;
  port: number;
}

export type OutputStream = 'stdout' | 'stderr' | 'agent';

export interface OutputLineMsg {
  stack_id: string;
  service: string;
  time_ms: number;
  stream: string;
  line: string;
}

export interface ServiceOutputMsg {
  lines: OutputLineMsg[];
}

export interface AgentMessage {
  body?: 'hello' | 'heartbeat' | 'connectivity' | 'job_event' | 'state' | 'scrape' | 'output';
  hello?: HelloMsg;
  heartbeat?: HeartbeatMsg;
  connectivity?: ConnectivityReportMsg;
  job_event?: JobEventMsg;
  state?: StateReportMsg;
  scrape?: ScrapeReportMsg;
  output?: ServiceOutputMsg;
}

export interface WelcomeMsg {
  worker_id: string;
  heartbeat_interval_ms: number;
  status: string;
  probe_key: string;
}

export interface ServerMessage {
  /** Which of the fields below is set, on a received message (proto-loader's `oneofs`). */
  body?: 'welcome' | 'probe' | 'disconnect' | 'heartbeat_ack' | 'job' | 'cancel_job';
  welcome?: WelcomeMsg;
  probe?: ProbeRequestMsg;
  disconnect?: { reason: string };
  heartbeat_ack?: { sequence: number };
  job?: JobCommandMsg;
  cancel_job?: CancelJobMsg;
}

export interface RenewCertificateRequest {
  csr_pem: string;
}

export interface RenewCertificateResponse {
  certificate_pem: string;
  ca_certificate_pem: string;
  not_after: string;
}

/** Reasons the gateway refuses an agent; the agent re-enrolls on these. */
export const IDENTITY_REVOKED = 'identity_revoked';

/**
 * What a probe listener holding `probeKey` answers to `ping <challenge>`: the service computes it to
 * tell the prober what to expect, the target agent to prove it is the one answering.
 */
export function probeAnswer(probeKey: string, challenge: string): string {
  return createHmac('sha256', probeKey).update(challenge).digest('base64url');
}
