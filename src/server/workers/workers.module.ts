import { Module } from '@nestjs/common';
import { AgentGatewayModule } from '../agent-gateway/agent-gateway.module.js';
import { AuthModule } from '../auth/auth.module.js';
import { HealthModule } from '../health/health.module.js';
import { MetricStoreModule } from '../metric-store/metric-store.module.js';
import { ConnectivityRepository } from './connectivity.repository.js';
import { ConnectivityService } from './connectivity.service.js';
import { EnrollmentService } from './enrollment.service.js';
import { JoinTokensController } from './join-tokens.controller.js';
import { JoinTokensRepository } from './join-tokens.repository.js';
import { JoinTokensService } from './join-tokens.service.js';
import { WorkersController } from './workers.controller.js';
import { WorkersRepository } from './workers.repository.js';
import { WorkersService } from './workers.service.js';

@Module({
  imports: [AgentGatewayModule, AuthModule, HealthModule, MetricStoreModule],
  controllers: [WorkersController, JoinTokensController],
  providers: [
    WorkersService,
    EnrollmentService,
    WorkersRepository,
    JoinTokensService,
    JoinTokensRepository,
    ConnectivityService,
    ConnectivityRepository,
  ],
  exports: [WorkersService, JoinTokensService, ConnectivityService],
})
export class WorkersModule {}
