import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { DatabaseHealth } from './database.health.js';
import { HealthController } from './health.controller.js';
import { OrchestratorController } from './orchestrator.controller.js';
import { OrchestratorHealthService } from './orchestrator-health.service.js';

@Module({
  imports: [TerminusModule.forRoot({ errorLogStyle: 'json' })],
  controllers: [HealthController, OrchestratorController],
  providers: [DatabaseHealth, OrchestratorHealthService],
  exports: [OrchestratorHealthService],
})
export class HealthModule {}
