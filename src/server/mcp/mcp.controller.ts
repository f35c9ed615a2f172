import { AppConfig } from '../config/config.js';
import { Body, Controller, Delete, Get, Logger, Post, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { Caller, RequireScopes } from '../auth/auth.decorators.js';
import { MethodNotAllowedError } from '../common/app-error.js';
import { DriftService } from '../drift/drift.service.js';
import { OrchestratorHealthService } from '../health/orchestrator-health.service.js';
import { JobsService } from '../jobs/jobs.service.js';
import { SettingsService } from '../settings/settings.service.js';
import { DefinitionService } from '../stacks/definition/definition.service.js';
import { StackLogsService } from '../stack-monitoring/stack-logs.service.js';
import { StacksService } from '../stacks/stacks.service.js';
import { TunnelService } from '../tunnel/tunnel.service.js';
import { ConnectivityService } from '../workers/connectivity.service.js';
import { WorkersService } from '../workers/workers.service.js';
import { MetricStoreService } from '../metric-store/store/metric-store.service.js';
import type { McpEndpoint, McpServices } from './mcp-endpoint.js';
import { ApiDoc, problemContent } from '../openapi/api-doc.js';
import { contractRef } from '../openapi/contract-schemas.js';

/**
 * MCP over Streamable HTTP at /mcp, stateless: every POST carries a whole exchange and is served by
 * a server built for that caller, so any replica answers any request and nothing is kept between
 * them (no session to lose when a load balancer moves a client). Any valid token opens it; each
 * tool checks the scope of the HTTP route it mirrors, and tools the token may not call are not listed.
 */
@Controller('mcp')
export class McpController {
  private readonly log = new Logger('mcp');
  private readonly services: McpServices;
  /** The SDK-backed endpoint (mcp-endpoint.ts), loaded and built on the first request. */
  private endpoint?: Promise<McpEndpoint>;

  constructor(
    tunnel: TunnelService,
    orchestrator: OrchestratorHealthService,
    definitions: DefinitionService,
    settings: SettingsService,
    workers: WorkersService,
    connectivity: ConnectivityService,
    stacks: StacksService,
    drift: DriftService,
    jobs: JobsService,
    metrics: MetricStoreService,
    config: AppConfig,
    stackLogs: StackLogsService,
  ) {
    this.services = {
      tunnel,
      orchestrator,
      definitions,
      settings,
      workers,
      connectivity,
      stacks,
      drift,
      jobs,
      metrics,
      config,
      stackLogs,
    };
  }

  @Post()
  @RequireScopes()
  @ApiDoc({
    summary: 'MCP (Streamable HTTP, stateless)',
    description:
      'One JSON-RPC 2.0 message per POST, answered as JSON (send `Accept: application/json, text/event-stream`). Each tool checks the scope of the HTTP route it mirrors, and tools the token may not call are not listed; docs/mcp.md lists them.',
    tag: 'MCP',
    body: 'JsonRpcRequest',
    responses: {
      200: 'JsonRpcResponse',
      202: { description: 'A notification or response was accepted; no body.', content: {} },
      400: {
        description: 'Not a JSON-RPC message (a JSON-RPC error).',
        content: { 'application/json': { schema: contractRef('JsonRpcError') }, ...problemContent() },
      },
      406: {
        description: 'The client does not accept application/json and text/event-stream (a JSON-RPC error).',
        content: { 'application/json': { schema: contractRef('JsonRpcError') } },
      },
    },
  })
  async post(
    @Caller() caller: Caller,
    @Req() req: Request,
    @Res() res: Response,
    @Body() body: unknown,
  ): Promise<void> {
    this.endpoint ??= import('./mcp-endpoint.js').then(
      ({ McpEndpoint }) => new McpEndpoint(this.services, this.log),
    );
    await (await this.endpoint).handle(caller, req, res, body);
  }

  /** Stateless: there is no event stream to open and no session to end. */
  @Get()
  @RequireScopes()
  @ApiDoc({
    summary: 'No event stream: this endpoint is stateless',
    tag: 'MCP',
    responses: {},
    problems: { 405: 'Always (`method_not_allowed`); POST each request.' },
  })
  stream(): never {
    throw new MethodNotAllowedError(
      'This MCP endpoint is stateless: POST each request; there is no event stream.',
    );
  }

  @Delete()
  @RequireScopes()
  @ApiDoc({
    summary: 'No session to end: this endpoint is stateless',
    tag: 'MCP',
    responses: {},
    problems: { 405: 'Always (`method_not_allowed`).' },
  })
  end(): never {
    throw new MethodNotAllowedError('This MCP endpoint is stateless: there is no session to end.');
  }
}
