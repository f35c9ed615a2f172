import { Injectable, Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { type Page, cursorPage } from '../common/pagination.js';
import { isOperator } from '../auth/operator.js';
import { RequestContext, type Caller } from '../common/request-context.js';
import type { AuditEventView } from '../../contracts/api/audit.js';
import { AuditRepository } from './audit.repository.js';
import type { ListAuditDto } from './dto/list-audit.dto.js';
import { AuditEventEntity } from './entities/audit-event.entity.js';

export type AuditAction =
  | 'token.issued'
  | 'auth.failed'
  | 'refresh.reuse_detected'
  | 'refresh.revoked'
  | 'client.created'
  | 'client.updated'
  | 'client.deleted'
  | 'keys.rotated'
  | 'settings.changed'
  | 'debug.bundle_created'
  | 'join_token.created'
  | 'join_token.revoked'
  | 'worker.enrolled'
  | 'worker.approved'
  | 'worker.deleted'
  | 'stack.created'
  | 'stack.revised'
  | 'stack.deploy_requested'
  | 'stack.destroy_requested'
  | 'stack.destroyed'
  | 'job.cancel_requested'
  | 'job.cleaned_up'
  | 'drift.detected'
  | 'drift.ignored'
  | 'drift.resolve_requested'
  | 'tunnel.started'
  | 'tunnel.stopped'
  | 'tunnel.custom_url_changed'
  | 'tunnel.base_created'
  | 'tunnel.services_published'
  | 'tunnel.services_unpublished';

export interface AuditInput {
  action: AuditAction;
  outcome?: 'success' | 'failure';
  /** The tenant the event belongs to; defaults to the caller's owner. */
  owner?: string | null;
  /** Who acted (a client id, `system`); defaults to the caller. */
  actor?: string | null;
  target?: string | null;
  details?: Record<string, unknown>;
}

/**
 * The audit trail: security-relevant actions, stored in PostgreSQL and written as log records with
 * `component: audit`. Details must never carry a secret; callers pass identifiers only.
 */
@Injectable()
export class AuditService {
  private readonly logger = new Logger('audit');

  constructor(private readonly repository: AuditRepository) {}

  async record(input: AuditInput): Promise<void> {
    const event = this.event(input);
    this.logRecord(event);
    await this.repository.insert(event);
  }

  /**
   * The row `record` would store, for a caller that stores it in a statement of its own (with the
   * change it records); it calls {@link logRecord} once that statement succeeded.
   */
  event(input: AuditInput): AuditEventEntity {
    const caller = RequestContext.caller();
    return Object.assign(new AuditEventEntity(), {
      id: randomUUID(),
      at: new Date(),
      action: input.action,
      outcome: input.outcome ?? 'success',
      owner: input.owner !== undefined ? input.owner : (caller?.owner ?? null),
      actor: input.actor !== undefined ? input.actor : (caller?.clientId ?? null),
      target: input.target ?? null,
      ip: RequestContext.ip() ?? null,
      requestId: RequestContext.requestId() ?? null,
      details: input.details ?? {},
    });
  }

  /** The log record (`component: audit`) of an event. */
  logRecord(event: AuditEventEntity): void {
    const view = toView(event);
    this.logger.log(
      {
        audit_action: view.action,
        outcome: view.outcome,
        owner: view.owner,
        actor: view.actor,
        target: view.target,
        details: view.details,
      },
      `audit ${view.action} ${view.outcome}`,
    );
  }

  /** Newest first: the caller's owner's events, or every owner's for the operator. */
  list(caller: Caller, query: ListAuditDto): Promise<Page<AuditEventView>> {
    const owner = isOperator(caller) ? undefined : caller.owner;
    return cursorPage(
      query,
      (take, after) => this.repository.list({ owner, action: query.action, after, limit: take }),
      (e) => ({ at: e.at.toISOString(), id: e.id }),
      toView,
    );
  }
}

function toView(e: AuditEventEntity): AuditEventView {
  return {
    id: e.id,
    at: e.at.toISOString(),
    action: e.action,
    outcome: e.outcome,
    owner: e.owner,
    actor: e.actor,
    target: e.target,
    ip: e.ip,
    request_id: e.requestId,
    details: e.details,
  };
}
