import { DynamicModule, Global, Module } from '@nestjs/common';
import type { Writable } from 'node:stream';
import { LoggerModule, PinoLogger } from 'nestjs-pino';
import { AppConfig } from '../config/config.js';
import { LogLevelService } from './log-level.service.js';
import { logDestination, loggerOptions } from './logging.js';
import { ServiceLogger } from './service-logger.js';

const RENAME_CONTEXT = 'component';

@Global()
@Module({})
export class LoggingModule {
  /** `console` is where log lines go besides the rotated files: stdout in production. */
  static forRoot(console: Writable): DynamicModule {
    return {
      module: LoggingModule,
      imports: [
        LoggerModule.forRootAsync({
          inject: [AppConfig],
          useFactory: async (config: AppConfig) => ({
            // pino-http only builds the root logger here (`PinoLogger.root`). Its per-request
            // middleware is not mounted (no routes): it made two child loggers per request,
            // serializing and redacting their bindings whether or not anything was logged.
            // Request records are written by the request front (common/request-front.ts), and
            // `request_id` reaches every record of a request through the logger's mixin.
            pinoHttp: [
              { ...loggerOptions(config.logLevel), wrapSerializers: false },
              await logDestination(config.dataDir, console, {
                format: config.logFormat,
                colorize: config.stdoutIsTerminal,
              }),
            ],
            forRoutes: [],
            renameContext: RENAME_CONTEXT,
          }),
        }),
      ],
      providers: [
        LogLevelService,
        {
          provide: ServiceLogger,
          inject: [PinoLogger],
          useFactory: (logger: PinoLogger) => new ServiceLogger(logger, { renameContext: RENAME_CONTEXT }),
        },
      ],
      exports: [LogLevelService, ServiceLogger],
    };
  }
}
