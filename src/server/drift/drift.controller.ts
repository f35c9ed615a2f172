import { Body, Controller, Get, HttpCode, Param, Post } from '@nestjs/common';
import { Caller, RequireScopes } from '../auth/auth.decorators.js';
import { orchestratorPaths } from '../common/paths.js';
import type { DriftResolve, DriftView } from '../../contracts/api/drift.js';
import { DriftService } from './drift.service.js';
import { DriftResourcesDto } from './dto/drift-resources.dto.js';
import { ApiDoc } from '../openapi/api-doc.js';

@Controller(orchestratorPaths('stacks'))
export class DriftController {
  constructor(private readonly drift: DriftService) {}

  @Get(':id/drift')
  @RequireScopes('orchestrator:read')
  @ApiDoc({ summary: "The stack's drift items", tag: 'Drift', responses: { 200: 'DriftView' } })
  get(@Caller() caller: Caller, @Param('id') id: string): Promise<DriftView> {
    return this.drift.get(caller, id);
  }

  /** 202 with the job that re-applies the desired state; 409 when nothing unignored drifted. */
  @Post(':id/drift/resolve')
  @RequireScopes('orchestrator:write')
  @ApiDoc({
    summary: 'Re-apply the desired state',
    tag: 'Drift',
    responses: { 202: 'DriftResolve' },
    problems: { 409: 'Nothing unignored drifted, or the stack already has an unfinished job (`conflict`).' },
  })
  @HttpCode(202)
  resolve(@Caller() caller: Caller, @Param('id') id: string): Promise<DriftResolve> {
    return this.drift.resolve(caller, id);
  }

  @Post(':id/drift/ignore')
  @RequireScopes('orchestrator:write')
  @ApiDoc({
    summary: "Ignore services' drift",
    tag: 'Drift',
    body: 'DriftResourcesRequest',
    responses: { 200: 'DriftView' },
  })
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
  @ApiDoc({
    summary: "Stop ignoring services' drift",
    tag: 'Drift',
    body: 'DriftResourcesRequest',
    responses: { 200: 'DriftView' },
  })
  @HttpCode(200)
  unignore(
    @Caller() caller: Caller,
    @Param('id') id: string,
    @Body() body: DriftResourcesDto,
  ): Promise<DriftView> {
    return this.drift.unignore(caller, id, body.resources);
  }
}
