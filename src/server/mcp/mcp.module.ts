import { Module } from '@nestjs/common';
import { DriftModule } from '../drift/drift.module.js';
import { HealthModule } from '../health/health.module.js';
import { JobsModule } from '../jobs/jobs.module.js';
import { MetricStoreModule } from '../metric-store/metric-store.module.js';
import { SettingsModule } from '../settings/settings.module.js';
import { DefinitionModule } from '../stacks/definition/definition.module.js';
import { StackMonitoringModule } from '../stack-monitoring/stack-monitoring.module.js';
import { StacksModule } from '../stacks/stacks.module.js';
import { TunnelModule } from '../tunnel/tunnel.module.js';
import { WorkersModule } from '../workers/workers.module.js';
import { McpController } from './mcp.controller.js';

/** The MCP endpoint: each tool is a thin call into a feature service. */
@Module({
  imports: [
    TunnelModule,
    HealthModule,
    DefinitionModule,
    SettingsModule,
    WorkersModule,
    StacksModule,
    StackMonitoringModule,
    DriftModule,
    JobsModule,
    MetricStoreModule,
  ],
  controllers: [McpController],
})
export class McpModule {}
