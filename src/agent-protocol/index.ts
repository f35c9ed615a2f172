import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
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
}

export interface HeartbeatMsg {
  sequence: number;
  metrics: NodeMetricsMsg | null;
  checks: CheckMsg[];
}

export interface ProbeTargetMsg {
  worker_id: string;
  address: string;
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
  error: string;
}

export interface ConnectivityReportMsg {
  probe_id: string;
  results: ProbeResultMsg[];
}

export interface AgentMessage {
  body?: 'hello' | 'heartbeat' | 'connectivity';
  hello?: HelloMsg;
  heartbeat?: HeartbeatMsg;
  connectivity?: ConnectivityReportMsg;
}

export interface WelcomeMsg {
  worker_id: string;
  heartbeat_interval_ms: number;
  status: string;
}

export interface ServerMessage {
  welcome?: WelcomeMsg;
  probe?: ProbeRequestMsg;
  disconnect?: { reason: string };
  heartbeat_ack?: { sequence: number };
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
