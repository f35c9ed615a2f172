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
  /** The format the current revision was written in. */
  format: 'stack' | 'compose';
  /** On the answers of create and replace only: what validation warned of. */
  warnings?: ValidationIssue[];
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
  /** How the file was read; null for a file of our format sent as it is. */
  reading: RevisionReading | null;
  /** The names of the variables it was sent with (their values are kept sealed, never shown). */
  variables: string[];
}

/** The request's reading of a revision's file (docs/compose.md, "Sending one"). */
export interface RevisionReading {
  format: 'stack' | 'compose';
  name?: string;
  stackkit?: string;
  variant?: string;
  profiles?: string[];
}

/** The 200 body of `POST .../unifier/validate`; an invalid file is a 400 or 422 problem instead. */
export interface ValidationSummary {
  valid: true;
  /** Which format the file was read as (CONTRACT.md, "Compose files"). */
  format: 'stack' | 'compose';
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

/** How a write path reads the definition it is sent (CONTRACT.md, "Compose files"; docs/compose.md). */
export interface DefinitionQuery {
  /** Force the format; by default a file with `services` and no `stackkit` is a Compose file. */
  format?: 'compose' | 'stack';
  /** Compose: the stack's name (else the file's `name`). */
  name?: string;
  /** Compose: the stack kit (else `x-stackkit`, else DEFAULT_STACKKIT). */
  stackkit?: string;
  /** Compose: the variant (else `x-variant`, else `default`). */
  variant?: string;
  /** Compose: the profiles to run, comma-separated. */
  profiles?: string;
}

/** The `application/json` body of the definition routes: the file and what interpolation reads. */
export interface DefinitionBody {
  /** The YAML text of the stack definition or Compose file. */
  definition: string;
  /** Compose: variables for interpolation and pass-through environment entries. */
  variables?: Record<string, string>;
  /** Compose: the profiles to run (instead of `?profiles=`). */
  profiles?: string[];
}

/** `GET .../stacks/{id}/definition`. */
export interface DefinitionExportQuery {
  /** `compose`: a Compose file of what the stack runs; `stack`: our format (absent: as written). */
  format?: 'compose' | 'stack';
}

/** `DELETE .../stacks/{id}`. */
export interface DestroyQuery {
  /** `delete`: remove the stack's volumes too; absent: they are kept on the worker. */
  volumes?: 'delete';
}
