import { DynamicModule, Global, Module } from '@nestjs/common';
import type { Writable } from 'node:stream';
import { LoggerModule } from 'nestjs-pino';
import { AppConfig } from '../config/config.js';
import { LogLevelService } from './log-level.service.js';
import { httpLoggingOptions, logDestination, loggerOptions } from './logging.js';

@Global()
@Module({})
export class LoggingModule {
  /** `console` is where JSON lines go besides the rotated files: stdout in production. */
  static forRoot(console: Writable): DynamicModule {
    return {
      module: LoggingModule,
      imports: [
        LoggerModule.forRootAsync({
          inject: [AppConfig],
          useFactory: async (config: AppConfig) => ({
            pinoHttp: [
              { ...loggerOptions(config.logLevel), ...httpLoggingOptions() },
              await logDestination(config.dataDir, console),
            ],
            renameContext: 'component',
          }),
        }),
      ],
      providers: [LogLevelService],
      exports: [LogLevelService],
    };
  }
}
