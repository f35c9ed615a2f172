import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { Logger } from '@nestjs/common';
import type { Request, Response } from 'express';
import type { AppConfig } from '../config/config.js';
import type { Caller } from '../common/request-context.js';
import { SERVICE_NAME, SERVICE_VERSION } from '../common/version.js';
import type { DriftService } from '../drift/drift.service.js';
import type { OrchestratorHealthService } from '../health/orchestrator-health.service.js';
import type { JobsService } from '../jobs/jobs.service.js';
import type { MetricStoreService } from '../metric-store/store/metric-store.service.js';
import type { SettingsService } from '../settings/settings.service.js';
import type { StackLogsService } from '../stack-monitoring/stack-logs.service.js';
import type { DefinitionService } from '../stacks/definition/definition.service.js';
import type { StacksService } from '../stacks/stacks.service.js';
import type { TunnelService } from '../tunnel/tunnel.service.js';
import type { ConnectivityService } from '../workers/connectivity.service.js';
import type { WorkersService } from '../workers/workers.service.js';
import { jobTools } from './job-tools.js';
import { metricTools } from './metric-tools.js';
import { orchestratorTools } from './orchestrator-tools.js';
import { servePrompts } from './prompts.js';
import { serveResources } from './resources.js';
import { stackTools } from './stack-tools.js';
import { ToolRegistry } from './tool.js';
import { tunnelTools } from './tunnel-tools.js';
import { workerTools } from './worker-tools.js';

/** The feature services the tools, resources and prompts call into. */
export interface McpServices {
  tunnel: TunnelService;
  orchestrator: OrchestratorHealthService;
  definitions: DefinitionService;
  settings: SettingsService;
  workers: WorkersService;
  connectivity: ConnectivityService;
  stacks: StacksService;
  drift: DriftService;
  jobs: JobsService;
  metrics: MetricStoreService;
  config: AppConfig;
  stackLogs: StackLogsService;
}

/**
 * Everything behind /mcp that needs the MCP SDK and zod (about 8 MB of heap with the tools' schemas):
 * the controller loads this module on the first request, so a service nobody calls over MCP never
 * holds it (docs/benchmarks.md, "Idle memory").
 */
export class McpEndpoint {
  private readonly tools: ToolRegistry;

  constructor(
    private readonly services: McpServices,
    private readonly log: Logger,
  ) {
    const s = services;
    this.tools = new ToolRegistry(
      [
        ...tunnelTools(s.tunnel),
        ...orchestratorTools(s.orchestrator, s.definitions, s.settings),
        ...workerTools(s.workers, s.connectivity),
        ...stackTools(s.stacks, s.drift, s.stackLogs),
        ...jobTools(s.jobs),
        ...metricTools(s.metrics, s.config),
      ],
      log,
    );
  }

  /** Serves one exchange on a server built for this caller. */
  async handle(caller: Caller, req: Request, res: Response, body: unknown): Promise<void> {
    const { stacks, drift, jobs } = this.services;
    const server = new McpServer({ name: SERVICE_NAME, version: SERVICE_VERSION });
    this.tools.serve(server.server, caller);
    serveResources(server, caller, { stacks, jobs }, this.log);
    servePrompts(server, caller, { stacks, drift, jobs }, this.log);
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  }
}
