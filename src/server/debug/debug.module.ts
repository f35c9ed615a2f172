import { Module } from '@nestjs/common';
import { HealthModule } from '../health/health.module.js';
import { JobsModule } from '../jobs/jobs.module.js';
import { MetricStoreModule } from '../metric-store/metric-store.module.js';
import { SettingsModule } from '../settings/settings.module.js';
import { WorkersModule } from '../workers/workers.module.js';
import { DebugController } from './debug.controller.js';
import { DebugRepository } from './debug.repository.js';
import { DebugService } from './debug.service.js';

@Module({
  imports: [HealthModule, JobsModule, MetricStoreModule, SettingsModule, WorkersModule],
  controllers: [DebugController],
  providers: [DebugService, DebugRepository],
})
export class DebugModule {}
