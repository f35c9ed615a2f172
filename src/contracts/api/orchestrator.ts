// `.../orchestrator/health` and `.../orchestrator/info`.
import type { Timestamp } from './common.js';

/** The checks the document names. */
export type CheckName = 'database' | 'grpc' | 'workers';

export interface OrchestratorHealth {
  status: 'healthy' | 'degraded' | 'unhealthy';
  version: string;
  /** Hours, minutes and seconds since the start: `72h15m30s`. */
  uptime: string;
  /** `ok` when passing, else a word saying why. */
  checks: Record<CheckName, string>;
}

export interface ServerInfo {
  name: string;
  version: string;
  mode: 'self-hosted';
  api_versions: string[];
  started_at: Timestamp;
  uptime: string;
  agent_endpoint: string;
  ca_fingerprint: string | null;
}
