import {
  Body,
  Controller,
  Delete,
  Get,
  HttpCode,
  Param,
  ParseIntPipe,
  Post,
  Put,
  Query,
} from '@nestjs/common';
import { RequireScopes } from '../auth/auth.decorators.js';
import { YAML_TYPES } from '../common/body-parsers.js';
import { Consumes } from '../common/media-type.js';
import { PageQueryDto } from '../common/pagination.js';
import { orchestratorPaths } from '../common/paths.js';
import type { JobView } from '../jobs/jobs.service.js';
import type { StackHealthView } from './stack-health.js';
import { StacksService, type StackView } from './stacks.service.js';

@Controller(orchestratorPaths('stacks'))
export class StacksController {
  constructor(private readonly stacks: StacksService) {}

  /** The body is the YAML definition; an invalid one answers like unifier/validate. */
  @Post()
  @RequireScopes('orchestrator:write')
  @Consumes(...YAML_TYPES)
  create(@Body() source: unknown): Promise<StackView> {
    return this.stacks.create(yamlBody(source));
  }

  @Get()
  @RequireScopes('orchestrator:read')
  async list(@Query() query: PageQueryDto): Promise<{ stacks: StackView[]; next_cursor: string | null }> {
    const page = await this.stacks.list(query);
    return { stacks: page.items, next_cursor: page.next_cursor };
  }

  @Get(':id')
  @RequireScopes('orchestrator:read')
  get(@Param('id') id: string): Promise<StackView> {
    return this.stacks.get(id);
  }

  /** A new revision of the definition; deploy applies it. */
  @Put(':id')
  @RequireScopes('orchestrator:write')
  @Consumes(...YAML_TYPES)
  replace(@Param('id') id: string, @Body() source: unknown): Promise<StackView> {
    return this.stacks.replace(id, yamlBody(source));
  }

  @Delete(':id')
  @RequireScopes('orchestrator:write')
  @HttpCode(202)
  delete(@Param('id') id: string): Promise<JobView> {
    return this.stacks.delete(id);
  }

  @Post(':id/deploy')
  @RequireScopes('orchestrator:write')
  @HttpCode(202)
  deploy(@Param('id') id: string): Promise<JobView> {
    return this.stacks.deploy(id);
  }

  @Get(':id/health')
  @RequireScopes('orchestrator:read')
  health(@Param('id') id: string): Promise<StackHealthView> {
    return this.stacks.health(id);
  }

  @Get(':id/revisions')
  @RequireScopes('orchestrator:read')
  revisions(@Param('id') id: string) {
    return this.stacks.revisions(id);
  }

  @Get(':id/revisions/:revision')
  @RequireScopes('orchestrator:read')
  revision(@Param('id') id: string, @Param('revision', ParseIntPipe) revision: number) {
    return this.stacks.revision(id, revision);
  }
}

/** The YAML text the body parser read; anything else (no body) is a 400 from the definition service. */
const yamlBody = (body: unknown): string => (typeof body === 'string' ? body : '');
