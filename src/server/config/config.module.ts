import { DynamicModule, Global, Module } from '@nestjs/common';
import { AppConfig } from './config.js';

/** Makes the already validated configuration injectable everywhere. */
@Global()
@Module({})
export class ConfigModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: ConfigModule,
      providers: [{ provide: AppConfig, useValue: config }],
      exports: [AppConfig],
    };
  }
}
