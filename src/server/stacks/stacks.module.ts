import { Module } from '@nestjs/common';
import { AgentGatewayModule } from '../agent-gateway/agent-gateway.module.js';
import { AuthModule } from '../auth/auth.module.js';
import { JobsModule } from '../jobs/jobs.module.js';
import { DefinitionModule } from './definition/definition.module.js';
import { MonitoringClientsRepository } from './monitoring/monitoring-clients.repository.js';
import { MonitoringClientsService } from './monitoring/monitoring-clients.service.js';
import { StackPublishing } from './stack-publishing.js';
import { StackReportsService } from './stack-reports.service.js';
import { STACKS_FOR_DRIFT, stacksForDrift } from './stacks-for-drift.js';
import { StacksController } from './stacks.controller.js';
import { StacksRepository } from './stacks.repository.js';
import { StacksService } from './stacks.service.js';

@Module({
  imports: [AgentGatewayModule, AuthModule, JobsModule, DefinitionModule],
  controllers: [StacksController],
  providers: [
    StacksService,
    StacksRepository,
    StackReportsService,
    StackPublishing,
    MonitoringClientsService,
    MonitoringClientsRepository,
    {
      provide: STACKS_FOR_DRIFT,
      useFactory: stacksForDrift,
      inject: [StacksService, StacksRepository, StackReportsService],
    },
  ],
  exports: [StacksService, STACKS_FOR_DRIFT, StackPublishing],
})
export class StacksModule {}
