import { Settings1764000000000 } from './1764000000000-settings.js';
import { Auth1764000100000 } from './1764000100000-auth.js';
import { Workers1764000200000 } from './1764000200000-workers.js';
import { WorkerLinks1764000300000 } from './1764000300000-worker-links.js';
import { StacksJobs1764000400000 } from './1764000400000-stacks-jobs.js';
import { Drift1764000500000 } from './1764000500000-drift.js';
import { WorkerLinksNoError1764000600000 } from './1764000600000-worker-links-no-error.js';
import { Tunnel1764000700000 } from './1764000700000-tunnel.js';
import { MetricStore1764000800000 } from './1764000800000-metric-store.js';
import { Replicas1764000900000 } from './1764000900000-replicas.js';
import { StackMonitoringClients1764001200000 } from './1764001200000-stack-monitoring-clients.js';
import { StackLogs1764001300000 } from './1764001300000-stack-logs.js';
import { AuthRevocations1764001400000 } from './1764001400000-auth-revocations.js';
import { AgentReplicas1764001500000 } from './1764001500000-agent-replicas.js';
import { StackRevisionReading1764001600000 } from './1764001600000-stack-revision-reading.js';

/** Every migration, oldest first. ESM has no directory globbing, so each is listed here. */
export const MIGRATIONS = [
  Settings1764000000000,
  Auth1764000100000,
  Workers1764000200000,
  WorkerLinks1764000300000,
  StacksJobs1764000400000,
  Drift1764000500000,
  WorkerLinksNoError1764000600000,
  Tunnel1764000700000,
  MetricStore1764000800000,
  Replicas1764000900000,
  StackMonitoringClients1764001200000,
  StackLogs1764001300000,
  AuthRevocations1764001400000,
  AgentReplicas1764001500000,
  StackRevisionReading1764001600000,
];
