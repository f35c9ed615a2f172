import { Body, Controller, HttpCode, Post, Query } from '@nestjs/common';
import { RequireScopes } from '../auth/auth.decorators.js';
import { JSON_TYPES, YAML_TYPES } from '../common/body-parsers.js';
import { definitionRequest } from './definition/definition-request.js';
import { Consumes } from '../common/media-type.js';
import { orchestratorPaths } from '../common/paths.js';
import type { ValidationSummary } from '../../contracts/api/stacks.js';
import { DefinitionService } from './definition/definition.service.js';
import { ApiDoc } from '../openapi/api-doc.js';

@Controller(orchestratorPaths('unifier'))
export class UnifierController {
  constructor(private readonly definitions: DefinitionService) {}

  /** Validates a stack definition file (the raw YAML body) without storing anything. */
  @Post('validate')
  @HttpCode(200)
  @Consumes(...YAML_TYPES, ...JSON_TYPES)
  @RequireScopes('orchestrator:read')
  @ApiDoc({
    summary: 'Validate a stack definition file without storing it',
    tag: 'Stacks',
    body: {
      type: 'string',
      description:
        'The stack definition or Compose file (YAML); or, as application/json, {definition, variables, profiles} (docs/compose.md).',
    },
    responses: { 200: 'ValidationSummary' },
    problems: {
      400: 'An empty body or invalid YAML (`invalid_yaml`, with the position in `errors[]`), or a body that could not be read.',
      422: 'The definition breaks the rules (`validation_failed`; `errors[]` with category, line and column).',
    },
  })
  validate(@Body() body: unknown, @Query() query: Record<string, unknown>): ValidationSummary {
    return this.definitions.validate(definitionRequest(body, query));
  }
}
