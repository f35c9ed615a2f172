import {
  Body,
  Controller,
  Delete,
  Get,
  Header,
  HttpCode,
  Param,
  ParseIntPipe,
  Post,
  Put,
  Query,
} from '@nestjs/common';
import { Caller, RequireScopes } from '../auth/auth.decorators.js';
import { JSON_TYPES, YAML_TYPES } from '../common/body-parsers.js';
import { definitionRequest } from './definition/definition-request.js';
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

/** A definition file sent as itself (application/yaml and its aliases), or in JSON with its variables. */
const DEFINITION_BODY = {
  oneOf: [
    { type: 'string', description: 'The stack definition or Compose file (YAML), as application/yaml.' },
    { $ref: '#/components/schemas/DefinitionBody' },
  ],
  description:
    'The stack definition or Compose file (YAML); or, as application/json, {definition, variables, profiles} (docs/compose.md).',
};

@Controller(orchestratorPaths('stacks'))
export class StacksController {
  constructor(private readonly stacks: StacksService) {}

  /** The body is the YAML definition; an invalid one answers like unifier/validate. */
  @Post()
  @RequireScopes('orchestrator:write')
  @Consumes(...YAML_TYPES, ...JSON_TYPES)
  @ApiDoc({
    summary: 'Create a stack from its definition file or a Compose file',
    tag: 'Stacks',
    body: DEFINITION_BODY,
    query: 'DefinitionQuery',
    responses: { 201: 'StackView' },
    problems: {
      400: 'An empty body or invalid YAML (`invalid_yaml`, with the position in `errors[]`), or a body that could not be read.',
      409: 'A stack with this name exists (`conflict`).',
      422: 'The definition breaks the rules (`validation_failed`; `errors[]` with category, line and column).',
    },
  })
  create(
    @Caller() caller: Caller,
    @Body() body: unknown,
    @Query() query: Record<string, unknown>,
  ): Promise<StackView> {
    return this.stacks.create(caller, definitionRequest(body, query));
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
  @Consumes(...YAML_TYPES, ...JSON_TYPES)
  @ApiDoc({
    summary: 'Save a new revision of the definition',
    description: 'Deploy applies it. The name cannot change.',
    tag: 'Stacks',
    body: DEFINITION_BODY,
    query: 'DefinitionQuery',
    responses: { 200: 'StackView' },
    problems: {
      400: 'An empty body or invalid YAML (`invalid_yaml`), or a body that could not be read.',
      409: 'The stack is being destroyed, the name changed, or another revision was saved at the same time (`conflict`).',
      422: 'The definition breaks the rules (`validation_failed`).',
    },
  })
  replace(
    @Caller() caller: Caller,
    @Param('id') id: string,
    @Body() body: unknown,
    @Query() query: Record<string, unknown>,
  ): Promise<StackView> {
    return this.stacks.replace(caller, id, definitionRequest(body, query));
  }

  @Delete(':id')
  @RequireScopes('orchestrator:write')
  @ApiDoc({
    summary: 'Destroy a stack',
    description:
      'Answers the destroy job; the stack is removed when it succeeds. Its volumes stay on the worker unless `volumes=delete` (docs/compose.md, "Volumes").',
    tag: 'Stacks',
    query: 'DestroyQuery',
    responses: { 202: 'JobView' },
    problems: { 409: 'The stack already has an unfinished job (`conflict`).' },
  })
  @HttpCode(202)
  delete(
    @Caller() caller: Caller,
    @Param('id') id: string,
    @Query() query: Record<string, unknown>,
  ): Promise<JobView> {
    return this.stacks.delete(caller, id, query);
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

  @Get(':id/definition')
  @RequireScopes('orchestrator:read')
  @Header('Content-Type', 'application/yaml; charset=utf-8')
  @ApiDoc({
    summary: "The current revision's definition, as written or as a Compose file",
    description:
      '`format=compose` answers a Compose file of what the stack runs (interpolation applied), which `docker compose` and `docker-compose config` read; `format=stack` our format; neither: the file as written (docs/compose.md, "Export").',
    tag: 'Stacks',
    query: 'DefinitionExportQuery',
    responses: {
      200: {
        description: 'The definition (YAML).',
        content: { 'application/yaml': { schema: { type: 'string' } } },
      },
    },
    problems: { 422: 'format=stack of a stack written as a Compose file (`validation_failed`).' },
  })
  definition(
    @Caller() caller: Caller,
    @Param('id') id: string,
    @Query() query: Record<string, unknown>,
  ): Promise<string> {
    return this.stacks.definitionFile(caller, id, query);
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
