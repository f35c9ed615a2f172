import { Module } from '@nestjs/common';
import { AgentGatewayModule } from '../agent-gateway/agent-gateway.module.js';
import { WorkersModule } from '../workers/workers.module.js';
import { AgentJobEvents } from './agent-job-events.js';
import { JobDispatcher } from './job-dispatcher.js';
import { JobEventWriter } from './job-event-writer.js';
import { JobLifecycle } from './job-lifecycle.js';
import { JobSweeper } from './job-sweeper.js';
import { JobsController } from './jobs.controller.js';
import { JobsRepository } from './jobs.repository.js';
import { JobsService } from './jobs.service.js';

@Module({
  imports: [AgentGatewayModule, WorkersModule],
  controllers: [JobsController],
  providers: [
    JobsService,
    JobsRepository,
    JobLifecycle,
    JobEventWriter,
    JobDispatcher,
    JobSweeper,
    AgentJobEvents,
  ],
  exports: [JobsService],
})
export class JobsModule {}
