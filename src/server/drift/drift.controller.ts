import { Body, Controller, Get, HttpCode, Param, Post } from '@nestjs/common';
import { Caller, RequireScopes } from '../auth/auth.decorators.js';
import { orchestratorPaths } from '../common/paths.js';
import type { DriftResolve, DriftView } from '../../contracts/api/drift.js';
import { DriftService } from './drift.service.js';
import { DriftResourcesDto } from './dto/drift-resources.dto.js';

@Controller(orchestratorPaths('stacks'))
export class DriftController {
  constructor(private readonly drift: DriftService) {}

  @Get(':id/drift')
  @RequireScopes('orchestrator:read')
  get(@Caller() caller: Caller, @Param('id') id: string): Promise<DriftView> {
    return this.drift.get(caller, id);
  }

  /** 202 with the job that re-applies the desired state; 409 when nothing unignored drifted. */
  @Post(':id/drift/resolve')
  @RequireScopes('orchestrator:write')
  @HttpCode(202)
  resolve(@Caller() caller: Caller, @Param('id') id: string): Promise<DriftResolve> {
    return this.drift.resolve(caller, id);
  }

  @Post(':id/drift/ignore')
  @RequireScopes('orchestrator:write')
  @HttpCode(200)
  ignore(
    @Caller() caller: Caller,
    @Param('id') id: string,
    @Body() body: DriftResourcesDto,
  ): Promise<DriftView> {
    return this.drift.ignore(caller, id, body.resources);
  }

  @Post(':id/drift/unignore')
  @RequireScopes('orchestrator:write')
  @HttpCode(200)
  unignore(
    @Caller() caller: Caller,
    @Param('id') id: string,
    @Body() body: DriftResourcesDto,
  ): Promise<DriftView> {
    return this.drift.unignore(caller, id, body.resources);
  }
}
