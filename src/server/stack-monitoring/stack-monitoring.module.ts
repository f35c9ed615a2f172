import { Module } from '@nestjs/common';
import { AgentGatewayModule } from '../agent-gateway/agent-gateway.module.js';
import { AuthModule } from '../auth/auth.module.js';
import { MetricStoreModule } from '../metric-store/metric-store.module.js';
import { StacksModule } from '../stacks/stacks.module.js';
import { AgentMonitoring } from './agent-monitoring.js';
import { ServiceMetricsRecorder } from './service-metrics.js';
import { StackLogRetention } from './stack-log-retention.js';
import { StackLogWriter } from './stack-log-writer.js';
import { StackLogsController } from './stack-logs.controller.js';
import { StackLogsRepository } from './stack-logs.repository.js';
import { StackLogsService } from './stack-logs.service.js';
import { StackTargets } from './stack-targets.js';

/**
 * What the agents observe of the stacks' services beyond their state (docs/stack-logs.md,
 * docs/metrics.md "Stack services"): scraped metrics into the built-in store, output lines into
 * `stack_logs`, their retention, and `GET .../stacks/:id/logs`.
 */
@Module({
  imports: [AgentGatewayModule, AuthModule, StacksModule, MetricStoreModule],
  controllers: [StackLogsController],
  providers: [
    AgentMonitoring,
    ServiceMetricsRecorder,
    StackTargets,
    StackLogWriter,
    StackLogsRepository,
    StackLogsService,
    StackLogRetention,
  ],
  // The MCP tool get_stack_logs reads through the same service as the HTTP route.
  exports: [StackLogsService],
})
export class StackMonitoringModule {}
