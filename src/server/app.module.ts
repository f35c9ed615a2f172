import { type ArgumentMetadata, DynamicModule, Module, ValidationPipe } from '@nestjs/common';
import { APP_FILTER, APP_PIPE } from '@nestjs/core';
import type { ValidationError } from 'class-validator';
import type { Writable } from 'node:stream';
import { ValidationFailedError } from './common/app-error.js';
import type { ProblemFieldError } from '../contracts/api/problem.js';
import { CommonModule } from './common/common.module.js';
import { ProblemFilter } from './common/problem.filter.js';
import { AuditModule } from './audit/audit.module.js';
import { AuthModule } from './auth/auth.module.js';
import { AppConfig } from './config/config.js';
import { ConfigModule } from './config/config.module.js';
import { DatabaseModule } from './database/database.module.js';
import { HealthModule } from './health/health.module.js';
import { LoggingModule } from './logging/logging.module.js';
import { MetricsModule } from './metrics/metrics.module.js';
import { SettingsModule } from './settings/settings.module.js';
import { WorkersModule } from './workers/workers.module.js';
import { JobsModule } from './jobs/jobs.module.js';
import { StacksModule } from './stacks/stacks.module.js';
import { DriftModule } from './drift/drift.module.js';
import { DefinitionModule } from './stacks/definition/definition.module.js';
import { TunnelModule } from './tunnel/tunnel.module.js';
import { MetricStoreModule } from './metric-store/metric-store.module.js';
import { StackMonitoringModule } from './stack-monitoring/stack-monitoring.module.js';
import { McpModule } from './mcp/mcp.module.js';
import { DebugModule } from './debug/debug.module.js';
import { OpenApiModule } from './openapi/openapi.module.js';

/** Flattens class-validator's tree into the problem's `errors` array. */
export function toFieldErrors(errors: ValidationError[], parent = ''): ProblemFieldError[] {
  return errors.flatMap((error) => {
    const path = parent ? `${parent}.${error.property}` : error.property;
    const own = Object.values(error.constraints ?? {}).map((message) => ({ path, message }));
    return [...own, ...toFieldErrors(error.children ?? [], path)];
  });
}

/** The metatypes ValidationPipe leaves alone: a body of one of these is not a DTO. */
const NOT_DTOS: unknown[] = [String, Boolean, Number, Array, Object, Buffer, Date];

/**
 * Nest's pipe, with one rule added: a body bound to a DTO must be a JSON object. The JSON parser
 * takes any JSON value, and the pipe would treat `null` as an empty body and validate a number or
 * an array as an object, so `null` created a join token with every default.
 */
class RequestValidationPipe extends ValidationPipe {
  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    const isDto = metadata.type === 'body' && metadata.metatype && !NOT_DTOS.includes(metadata.metatype);
    if (isDto && value !== undefined && (value === null || typeof value !== 'object' || Array.isArray(value)))
      throw new ValidationFailedError(
        [{ path: 'body', message: 'the body must be a JSON object' }],
        'The request body must be a JSON object.',
      );
    return super.transform(value, metadata);
  }
}

export const validationPipe = new RequestValidationPipe({
  whitelist: true,
  forbidNonWhitelisted: true,
  transform: true,
  exceptionFactory: (errors) => new ValidationFailedError(toFieldErrors(errors)),
});

@Module({})
export class AppModule {
  static forRoot(config: AppConfig, logConsole: Writable): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ConfigModule.forRoot(config),
        CommonModule,
        LoggingModule.forRoot(logConsole),
        DatabaseModule,
        MetricsModule,
        AuditModule,
        AuthModule,
        HealthModule,
        SettingsModule,
        WorkersModule,
        JobsModule,
        StacksModule,
        DriftModule,
        DefinitionModule,
        TunnelModule,
        McpModule,
        MetricStoreModule,
        DebugModule,
        StackMonitoringModule,
        OpenApiModule,
      ],
      providers: [
        { provide: APP_FILTER, useClass: ProblemFilter },
        { provide: APP_PIPE, useValue: validationPipe },
      ],
    };
  }
}
