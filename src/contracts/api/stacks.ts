// `.../orchestrator/stacks` and `.../orchestrator/unifier/validate`. Requests that carry a
// definition send the YAML file itself as the body (`application/yaml`), not JSON.
import type { Timestamp } from './common.js';
import type { ListPage } from './page.js';
import type { StackDefinition, ValidationIssue } from './stack-definition.js';

/** draft: created, never deployed; the rest follow its jobs (docs/stacks.md). */
export type StackStatus = 'draft' | 'deploying' | 'deployed' | 'failed' | 'destroying';

export interface StackView {
  id: string;
  name: string;
  status: StackStatus;
  stackkit: string;
  variant: string;
  /** The current (latest) revision. */
  revision: number;
  deployed_revision: number | null;
  worker_id: string | null;
  /** Service names in dependency order, monitoring services included. */
  services: string[];
  created_at: Timestamp;
  updated_at: Timestamp;
}

export type StackList = ListPage<'stacks', StackView>;

/** `GET .../stacks/:id/revisions`. */
export interface StackRevisionList {
  stack_id: string;
  revisions: {
    revision: number;
    created_at: Timestamp;
    /** The client that wrote it. */
    created_by: string;
    current: boolean;
    deployed: boolean;
  }[];
}

/** `GET .../stacks/:id/revisions/:revision`: the file as sent and what validation made of it. */
export interface StackRevision {
  stack_id: string;
  revision: number;
  created_at: Timestamp;
  source: string;
  definition: StackDefinition;
}

/** The 200 body of `POST .../unifier/validate`; an invalid file is a 400 or 422 problem instead. */
export interface ValidationSummary {
  valid: true;
  stackkit: string;
  variant: string;
  /** Service names in dependency order, monitoring services included. */
  services: string[];
  warnings: ValidationIssue[];
}

export type ServiceHealthStatus =
  'healthy' | 'unhealthy' | 'starting' | 'restarting' | 'stopped' | 'missing' | 'unknown';

export interface ServiceHealthView {
  name: string;
  status: ServiceHealthStatus;
  uptime: string;
  /** The latest health check, for a service that has one and has been checked. */
  health_check?: { url: string; status_code: number; latency_ms: number };
}

/** `GET .../stacks/:id/health`, from the latest state report of the stack's worker. */
export interface StackHealthView {
  stack_id: string;
  overall: 'healthy' | 'degraded' | 'unhealthy' | 'unknown';
  services: ServiceHealthView[];
  worker_id: string | null;
  reported_at: Timestamp | null;
}
