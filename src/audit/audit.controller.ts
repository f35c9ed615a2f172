import { Controller, Get, Query } from '@nestjs/common';
import { RequireScopes } from '../auth/auth.decorators.js';
import { isOperator } from '../auth/operator.js';
import { DEFAULT_PAGE_SIZE } from '../common/pagination.js';
import { orchestratorPaths } from '../common/paths.js';
import { RequestContext } from '../common/request-context.js';
import { AuditService, type AuditEventView } from './audit.service.js';
import { ListAuditDto } from './dto/list-audit.dto.js';

@Controller(orchestratorPaths('audit'))
export class AuditController {
  constructor(private readonly audit: AuditService) {}

  /** Newest first. An owner's admins see that owner's events; the operator's see every event. */
  @Get()
  @RequireScopes('admin')
  async list(
    @Query() query: ListAuditDto,
  ): Promise<{ events: AuditEventView[]; next_cursor: string | null }> {
    const caller = RequestContext.requireCaller();
    const page = await this.audit.list(
      isOperator(caller) ? undefined : caller.owner,
      query.limit ?? DEFAULT_PAGE_SIZE,
      query.cursor,
      query.action,
    );
    return { events: page.items, next_cursor: page.next_cursor };
  }
}
