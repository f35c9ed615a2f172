import { Injectable } from '@nestjs/common';
import { AppError, ValidationFailedError } from '../../common/app-error.js';
import type { ProblemFieldError } from '../../../contracts/api/problem.js';
import type { ValidationSummary } from '../../../contracts/api/stacks.js';
import type { StackDefinition, ValidationIssue } from './definition.types.js';
import { validateDefinition } from './validate-definition.js';
import type { DefinitionRequest } from './definition-request.js';
import { AppConfig } from '../../config/config.js';
import { getCatalog } from '../catalog/catalog.js';

const toFieldError = (issue: ValidationIssue): ProblemFieldError => ({
  path: issue.path,
  category: issue.category,
  message: issue.message,
  ...(issue.line !== null ? { line: issue.line } : {}),
  ...(issue.column !== null ? { column: issue.column } : {}),
});

/**
 * Stack definition files: parsing and validation for the validate endpoint and for the stacks
 * feature, with one set of errors (400 `invalid_yaml`, 422 `validation_failed`) for both.
 */
@Injectable()
export class DefinitionService {
  constructor(private readonly config: AppConfig) {}

  /** Validates a definition file; throws the problem a client should see when it is not valid. */
  validate(request: DefinitionRequest): ValidationSummary {
    const { definition, warnings } = this.parse(request);
    return {
      valid: true,
      format: definition.format ?? 'stack',
      stackkit: definition.stackkit,
      variant: definition.variant,
      services: definition.services.map((s) => s.name),
      warnings,
    };
  }

  /** The normalized definition of a valid file and its warnings; throws like {@link validate}. */
  parse(request: DefinitionRequest): { definition: StackDefinition; warnings: ValidationIssue[] } {
    const source = request.source;
    if (source.trim() === '') {
      throw new AppError(
        400,
        'invalid_yaml',
        'Invalid YAML',
        'The request body is empty: send the stack definition file as the body, with Content-Type application/yaml.',
      );
    }
    const result = validateDefinition(source, getCatalog(), {
      ...request.options,
      defaultStackkit: this.config.defaultStackkit,
    });
    switch (result.kind) {
      case 'valid':
        return { definition: result.definition, warnings: result.warnings };
      case 'yaml_error': {
        const { message, line, column } = result.error;
        throw new AppError(
          400,
          'invalid_yaml',
          'Invalid YAML',
          `The stack definition is not valid YAML: ${message} (line ${line}, column ${column}).`,
          [{ path: '', message, line, column }],
        );
      }
      case 'invalid': {
        const count = result.errors.length;
        throw new ValidationFailedError(
          result.errors.map(toFieldError),
          `The stack definition has ${count} ${count === 1 ? 'error' : 'errors'}.`,
          result.warnings.map(toFieldError),
        );
      }
    }
  }
}
