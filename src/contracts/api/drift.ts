// `.../orchestrator/stacks/:id/drift`: differences between a stack's revision and its node.
import type { Timestamp } from './common.js';
import type { JobView } from './jobs.js';

export type DriftStatus = 'in_sync' | 'drifted' | 'unknown';
export type DriftKind = 'missing' | 'modified' | 'unexpected';

export interface DriftItemView {
  /** The service name. */
  resource: string;
  kind: DriftKind;
  worker_id: string | null;
  /** The field that differs, for `modified`. */
  field: string | null;
  desired: string | null;
  actual: string | null;
  ignored: boolean;
  detected_at: Timestamp;
  last_seen: Timestamp;
}

export interface DriftView {
  stack_id: string;
  status: DriftStatus;
  checked_at: Timestamp | null;
  revision: number;
  items: DriftItemView[];
  ignored_resources: string[];
}

/** `POST .../drift/ignore` and `.../drift/unignore`. */
export interface DriftResourcesRequest {
  /** Service names. */
  resources: string[];
}

/** `POST .../drift/resolve` (202): the job that re-applies the desired state. */
export interface DriftResolve {
  job_id: string;
  job: JobView;
}
