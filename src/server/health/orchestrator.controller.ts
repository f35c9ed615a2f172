import { Controller, Get, Res } from '@nestjs/common';
import type { Response } from 'express';
import { Public, RequireScopes } from '../auth/auth.decorators.js';
import { orchestratorPaths } from '../common/paths.js';
import type { OrchestratorHealth, ServerInfo } from '../../contracts/api/orchestrator.js';
import { OrchestratorHealthService } from './orchestrator-health.service.js';
import { ApiDoc } from '../openapi/api-doc.js';
import { contractRef } from '../openapi/contract-schemas.js';

@Controller(orchestratorPaths())
export class OrchestratorController {
  constructor(private readonly orchestrator: OrchestratorHealthService) {}

  /** 200 while the service can work (healthy or degraded), 503 when unhealthy. */
  @Get('health')
  @Public()
  @ApiDoc({
    summary: 'Orchestrator health',
    tag: 'Orchestrator',
    responses: {
      200: {
        description: 'Healthy or degraded.',
        content: { 'application/json': { schema: contractRef('OrchestratorHealth') } },
      },
      503: {
        description: 'Unhealthy: the database is failing.',
        content: { 'application/json': { schema: contractRef('OrchestratorHealth') } },
      },
    },
  })
  async health(@Res({ passthrough: true }) res: Response): Promise<OrchestratorHealth> {
    const health = await this.orchestrator.health();
    if (health.status === 'unhealthy') res.status(503);
    return health;
  }

  @Get('info')
  @RequireScopes('orchestrator:read')
  @ApiDoc({ summary: 'Service information', tag: 'Orchestrator', responses: { 200: 'ServerInfo' } })
  info(): ServerInfo {
    return this.orchestrator.info();
  }
}
