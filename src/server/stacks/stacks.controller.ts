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
import { Caller, RequireScopes } from '../auth/auth.decorators.js';
import { YAML_TYPES } from '../common/body-parsers.js';
import { Consumes } from '../common/media-type.js';
import { PageQueryDto } from '../common/pagination.js';
import { orchestratorPaths } from '../common/paths.js';
import type { JobView } from '../../contracts/api/jobs.js';
import type {
  StackHealthView,
  StackList,
  StackRevision,
  StackRevisionList,
  StackView,
} from '../../contracts/api/stacks.js';
import { StacksService } from './stacks.service.js';

@Controller(orchestratorPaths('stacks'))
export class StacksController {
  constructor(private readonly stacks: StacksService) {}

  /** The body is the YAML definition; an invalid one answers like unifier/validate. */
  @Post()
  @RequireScopes('orchestrator:write')
  @Consumes(...YAML_TYPES)
  create(@Caller() caller: Caller, @Body() source: unknown): Promise<StackView> {
    return this.stacks.create(caller, yamlBody(source));
  }

  @Get()
  @RequireScopes('orchestrator:read')
  async list(@Caller() caller: Caller, @Query() query: PageQueryDto): Promise<StackList> {
    const page = await this.stacks.list(caller, query);
    return { stacks: page.items, next_cursor: page.next_cursor };
  }

  @Get(':id')
  @RequireScopes('orchestrator:read')
  get(@Caller() caller: Caller, @Param('id') id: string): Promise<StackView> {
    return this.stacks.get(caller, id);
  }

  /** A new revision of the definition; deploy applies it. */
  @Put(':id')
  @RequireScopes('orchestrator:write')
  @Consumes(...YAML_TYPES)
  replace(@Caller() caller: Caller, @Param('id') id: string, @Body() source: unknown): Promise<StackView> {
    return this.stacks.replace(caller, id, yamlBody(source));
  }

  @Delete(':id')
  @RequireScopes('orchestrator:write')
  @HttpCode(202)
  delete(@Caller() caller: Caller, @Param('id') id: string): Promise<JobView> {
    return this.stacks.delete(caller, id);
  }

  @Post(':id/deploy')
  @RequireScopes('orchestrator:write')
  @HttpCode(202)
  deploy(@Caller() caller: Caller, @Param('id') id: string): Promise<JobView> {
    return this.stacks.deploy(caller, id);
  }

  @Get(':id/health')
  @RequireScopes('orchestrator:read')
  health(@Caller() caller: Caller, @Param('id') id: string): Promise<StackHealthView> {
    return this.stacks.health(caller, id);
  }

  @Get(':id/revisions')
  @RequireScopes('orchestrator:read')
  revisions(@Caller() caller: Caller, @Param('id') id: string): Promise<StackRevisionList> {
    return this.stacks.revisions(caller, id);
  }

  @Get(':id/revisions/:revision')
  @RequireScopes('orchestrator:read')
  revision(
    @Caller() caller: Caller,
    @Param('id') id: string,
    @Param('revision', ParseIntPipe) revision: number,
  ): Promise<StackRevision> {
    return this.stacks.revision(caller, id, revision);
  }
}

/** The YAML text the body parser read; anything else (no body) is a 400 from the definition service. */
const yamlBody = (body: unknown): string => (typeof body === 'string' ? body : '');
