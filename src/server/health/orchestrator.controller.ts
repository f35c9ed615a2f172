import { Controller, Get, Res } from '@nestjs/common';
import type { Response } from 'express';
import { Public, RequireScopes } from '../auth/auth.decorators.js';
import { orchestratorPaths } from '../common/paths.js';
import type { OrchestratorHealth, ServerInfo } from '../../contracts/api/orchestrator.js';
import { OrchestratorHealthService } from './orchestrator-health.service.js';
import { ApiDoc, jsonAnswer } from '../openapi/api-doc.js';

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
      200: jsonAnswer('OrchestratorHealth', 'Healthy or degraded.'),
      503: jsonAnswer('OrchestratorHealth', 'Unhealthy: the database is failing.'),
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
