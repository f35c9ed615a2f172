import { Module } from '@nestjs/common';
import { AgentGatewayModule } from '../agent-gateway/agent-gateway.module.js';
import { JobsModule } from '../jobs/jobs.module.js';
import { DefinitionModule } from './definition/definition.module.js';
import { StacksController } from './stacks.controller.js';
import { StacksRepository } from './stacks.repository.js';
import { StacksService } from './stacks.service.js';

@Module({
  imports: [AgentGatewayModule, JobsModule, DefinitionModule],
  controllers: [StacksController],
  providers: [StacksService, StacksRepository],
  exports: [StacksService],
})
export class StacksModule {}
