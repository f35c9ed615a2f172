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
import { ApiDoc } from '../openapi/api-doc.js';

/** A definition file sent as itself (application/yaml and its aliases), not as JSON. */
const DEFINITION_BODY = { type: 'string', description: 'The stack definition file (YAML).' };

@Controller(orchestratorPaths('stacks'))
export class StacksController {
  constructor(private readonly stacks: StacksService) {}

  /** The body is the YAML definition; an invalid one answers like unifier/validate. */
  @Post()
  @RequireScopes('orchestrator:write')
  @Consumes(...YAML_TYPES)
  @ApiDoc({
    summary: 'Create a stack from its definition file',
    tag: 'Stacks',
    body: DEFINITION_BODY,
    responses: { 201: 'StackView' },
    problems: {
      400: 'An empty body or invalid YAML (`invalid_yaml`, with the position in `errors[]`), or a body that could not be read.',
      409: 'A stack with this name exists (`conflict`).',
      422: 'The definition breaks the rules (`validation_failed`; `errors[]` with category, line and column).',
    },
  })
  create(@Caller() caller: Caller, @Body() source: unknown): Promise<StackView> {
    return this.stacks.create(caller, yamlBody(source));
  }

  @Get()
  @RequireScopes('orchestrator:read')
  @ApiDoc({ summary: 'List stacks', tag: 'Stacks', query: 'PageQuery', responses: { 200: 'StackList' } })
  async list(@Caller() caller: Caller, @Query() query: PageQueryDto): Promise<StackList> {
    const page = await this.stacks.list(caller, query);
    return { stacks: page.items, next_cursor: page.next_cursor };
  }

  @Get(':id')
  @RequireScopes('orchestrator:read')
  @ApiDoc({ summary: 'Read a stack', tag: 'Stacks', responses: { 200: 'StackView' } })
  get(@Caller() caller: Caller, @Param('id') id: string): Promise<StackView> {
    return this.stacks.get(caller, id);
  }

  /** A new revision of the definition; deploy applies it. */
  @Put(':id')
  @RequireScopes('orchestrator:write')
  @Consumes(...YAML_TYPES)
  @ApiDoc({
    summary: 'Save a new revision of the definition',
    description: 'Deploy applies it. The name cannot change.',
    tag: 'Stacks',
    body: DEFINITION_BODY,
    responses: { 200: 'StackView' },
    problems: {
      400: 'An empty body or invalid YAML (`invalid_yaml`), or a body that could not be read.',
      409: 'The stack is being destroyed, the name changed, or another revision was saved at the same time (`conflict`).',
      422: 'The definition breaks the rules (`validation_failed`).',
    },
  })
  replace(@Caller() caller: Caller, @Param('id') id: string, @Body() source: unknown): Promise<StackView> {
    return this.stacks.replace(caller, id, yamlBody(source));
  }

  @Delete(':id')
  @RequireScopes('orchestrator:write')
  @ApiDoc({
    summary: 'Destroy a stack',
    description: 'Answers the destroy job; the stack is removed when it succeeds.',
    tag: 'Stacks',
    responses: { 202: 'JobView' },
    problems: { 409: 'The stack already has an unfinished job (`conflict`).' },
  })
  @HttpCode(202)
  delete(@Caller() caller: Caller, @Param('id') id: string): Promise<JobView> {
    return this.stacks.delete(caller, id);
  }

  @Post(':id/deploy')
  @RequireScopes('orchestrator:write')
  @ApiDoc({
    summary: 'Deploy the current revision',
    tag: 'Stacks',
    responses: { 202: 'JobView' },
    problems: { 409: 'The stack is being destroyed or already has an unfinished job (`conflict`).' },
  })
  @HttpCode(202)
  deploy(@Caller() caller: Caller, @Param('id') id: string): Promise<JobView> {
    return this.stacks.deploy(caller, id);
  }

  @Get(':id/health')
  @RequireScopes('orchestrator:read')
  @ApiDoc({ summary: "The stack's services' health", tag: 'Stacks', responses: { 200: 'StackHealthView' } })
  health(@Caller() caller: Caller, @Param('id') id: string): Promise<StackHealthView> {
    return this.stacks.health(caller, id);
  }

  @Get(':id/revisions')
  @RequireScopes('orchestrator:read')
  @ApiDoc({ summary: "The stack's revisions", tag: 'Stacks', responses: { 200: 'StackRevisionList' } })
  revisions(@Caller() caller: Caller, @Param('id') id: string): Promise<StackRevisionList> {
    return this.stacks.revisions(caller, id);
  }

  @Get(':id/revisions/:revision')
  @RequireScopes('orchestrator:read')
  @ApiDoc({
    summary: 'One revision: the file as sent and its normalized definition',
    tag: 'Stacks',
    responses: { 200: 'StackRevision' },
    problems: { 400: 'The revision is not an integer (`bad_request`).' },
  })
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
