import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { RequireScopes } from '../auth/auth.decorators.js';
import { YAML_TYPES } from '../common/body-parsers.js';
import { Consumes } from '../common/media-type.js';
import { orchestratorPaths } from '../common/paths.js';
import type { ValidationSummary } from '../../contracts/api/stacks.js';
import { DefinitionService } from './definition/definition.service.js';

@Controller(orchestratorPaths('unifier'))
export class UnifierController {
  constructor(private readonly definitions: DefinitionService) {}

  /** Validates a stack definition file (the raw YAML body) without storing anything. */
  @Post('validate')
  @HttpCode(200)
  @Consumes(...YAML_TYPES)
  @RequireScopes('orchestrator:read')
  validate(@Body() body: unknown): ValidationSummary {
    return this.definitions.validate(body);
  }
}
