import { Controller, Get, Query } from '@nestjs/common';
import { Caller, RequireScopes } from '../auth/auth.decorators.js';
import { orchestratorPaths } from '../common/paths.js';
import type { AuditList } from '../../contracts/api/audit.js';
import { AuditService } from './audit.service.js';
import { ListAuditDto } from './dto/list-audit.dto.js';
import { ApiDoc } from '../openapi/api-doc.js';

@Controller(orchestratorPaths('audit'))
export class AuditController {
  constructor(private readonly audit: AuditService) {}

  /** Newest first. An owner's admins see that owner's events; the operator's see every event. */
  @Get()
  @RequireScopes('admin')
  @ApiDoc({
    summary: 'The audit trail, newest first',
    tag: 'Audit',
    query: 'ListAuditQuery',
    responses: { 200: 'AuditList' },
  })
  async list(@Caller() caller: Caller, @Query() query: ListAuditDto): Promise<AuditList> {
    const page = await this.audit.list(caller, query);
    return { events: page.items, next_cursor: page.next_cursor };
  }
}
