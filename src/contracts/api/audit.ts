// `.../orchestrator/audit`: the audit trail, newest first.
import type { Timestamp } from './common.js';
import type { ListPage, PageQuery } from './page.js';

export interface AuditEventView {
  id: string;
  at: Timestamp;
  /** `client.created`, `stack.revised`, ... */
  action: string;
  outcome: string;
  owner: string | null;
  /** Who acted: a client id, `system`, `join-token:<id>`. */
  actor: string | null;
  target: string | null;
  ip: string | null;
  request_id: string | null;
  details: Record<string, unknown>;
}

export interface ListAuditQuery extends PageQuery {
  action?: string;
}

export type AuditList = ListPage<'events', AuditEventView>;
