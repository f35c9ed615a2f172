import { Module } from '@nestjs/common';
import { TunnelModule } from '../tunnel/tunnel.module.js';
import { McpController } from './mcp.controller.js';

/** The MCP endpoint: each tool is a thin call into a feature service. */
@Module({ imports: [TunnelModule], controllers: [McpController] })
export class McpModule {}
