// `.../orchestrator/workers`: enrollment (agents), workers and their connectivity (operators).
import type { Labels, Timestamp } from './common.js';
import type { ListPage, PageQuery } from './page.js';

/** The worker states of the interface document, part 3 (docs/workers.md draws the graph). */
export type WorkerStatus = 'healthy' | 'degraded' | 'unhealthy' | 'unreachable' | 'pending';

/** The node's figures from its latest heartbeat. */
export interface WorkerMetrics {
  cpu_percent: number;
  memory_percent: number;
  disk_percent: number;
  containers_running: number;
}

export interface WorkerView {
  id: string;
  name: string;
  status: WorkerStatus;
  last_heartbeat: Timestamp | null;
  metrics: WorkerMetrics | null;
  hostname: string;
  /** The operator's --address, else where the agent last connected from; '' when neither is known. */
  address: string;
  os: string;
  arch: string;
  driver: string;
  labels: Labels;
  version: string;
  connected: boolean;
  approved_at: Timestamp | null;
  created_at: Timestamp;
}

export interface ListWorkersQuery extends PageQuery {
  status?: WorkerStatus;
}

export type WorkerList = ListPage<'workers', WorkerView>;

export type WorkerDriver = 'docker' | 'process';

/** `POST .../workers/enroll`: an agent with a join token instead of an access token. */
export interface EnrollRequest {
  token: string;
  /** PEM certificate signing request for the agent's key. */
  csr: string;
  hostname: string;
  /** The operator's --address for this node; peers probe it there instead of where it connects from. */
  address?: string;
  os: string;
  arch: string;
  version: string;
  driver: WorkerDriver;
  /** A DNS label; the hostname's first label by default. */
  name?: string;
  labels?: Labels;
  /** The id this agent had before the service deleted it; such an agent enrolls as pending. */
  previous_worker_id?: string;
}

export interface EnrollmentResult {
  worker_id: string;
  status: WorkerStatus;
  /** The pending agent polls with it; shown once. */
  enrollment_secret: string;
  ca_certificate: string;
  ca_fingerprint: string;
  /** The agent's certificate at once when the join token is pre-approved, else null. */
  certificate: string | null;
  agent_endpoint: string;
  heartbeat_interval_ms: number;
}

/** `POST .../workers/enroll/status`: a pending agent asks whether it was approved. */
export interface EnrollmentStatusRequest {
  worker_id: string;
  enrollment_secret: string;
}

export interface EnrollmentStatus {
  status: WorkerStatus;
  /** Its certificate once it is approved. */
  certificate: string | null;
}

/** `GET .../workers/connectivity`: the latest probe result between each pair of the caller's workers. */
export interface ConnectivityView {
  workers: string[];
  links: {
    from: string;
    to: string;
    reachable: boolean;
    rtt_ms: number | null;
    checked_at: Timestamp;
  }[];
}

/** `POST .../workers/connectivity/check` (202): the round asked for and how many agents it reached. */
export interface ConnectivityCheck {
  probe_id: string;
  workers: number;
}
