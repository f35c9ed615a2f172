import { Module } from '@nestjs/common';
import { AgentGatewayModule } from '../agent-gateway/agent-gateway.module.js';
import { StacksModule } from '../stacks/stacks.module.js';
import { DriftController } from './drift.controller.js';
import { DriftRepository } from './drift.repository.js';
import { DriftService } from './drift.service.js';

@Module({
  imports: [AgentGatewayModule, StacksModule],
  controllers: [DriftController],
  providers: [DriftService, DriftRepository],
  exports: [DriftService],
})
export class DriftModule {}
