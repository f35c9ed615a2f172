import { Body, Controller, Get, Header, HttpCode, Post, Req, Res, StreamableFile } from '@nestjs/common';
import type { Request, Response } from 'express';
import { Caller, Public, RequireScopes } from '../../auth/auth.decorators.js';
import { InstallCommandDto } from './dto/install-command.dto.js';
import type { InstallCommand } from '../../../contracts/api/tunnel.js';
import { InstallService } from './install.service.js';
import { ApiDoc } from '../../openapi/api-doc.js';

/** Scripts are text so that a browser shows them and PowerShell's Invoke-WebRequest reads a string. */
const SCRIPT_TYPE = 'text/plain; charset=utf-8';
/** Caches may keep the files but must ask again each time: the URLs carry no version. */
const REVALIDATE = 'no-cache';

/**
 * The installers and the agent download, served at the root without a token (a machine that is
 * not an agent yet has none), and the install command under the tunnel API.
 */
const SCRIPT = { description: 'The script.', content: { 'text/plain': { schema: { type: 'string' } } } };

@Controller()
export class InstallController {
  constructor(private readonly install: InstallService) {}

  @Get('install.sh')
  @Public()
  @ApiDoc({ summary: 'The agent installer for Linux and macOS', tag: 'Install', responses: { 200: SCRIPT } })
  @Header('Content-Type', SCRIPT_TYPE)
  @Header('Cache-Control', REVALIDATE)
  installSh(): string {
    return this.install.script('install.sh');
  }

  @Get('install.ps1')
  @Public()
  @ApiDoc({
    summary: 'The agent installer for Windows (PowerShell)',
    tag: 'Install',
    responses: { 200: SCRIPT },
  })
  @Header('Content-Type', SCRIPT_TYPE)
  @Header('Cache-Control', REVALIDATE)
  installPs1(): string {
    return this.install.script('install.ps1');
  }

  /** The bundled agent; its ETag is its SHA-256, the digest the install commands check. */
  @Get('downloads/stack-agent.mjs')
  @Public()
  @ApiDoc({
    summary: 'The bundled agent',
    description: 'Its ETag is its SHA-256, the digest the install commands check.',
    tag: 'Install',
    responses: {
      200: { description: 'The agent.', content: { 'text/javascript': { schema: { type: 'string' } } } },
      304: null,
    },
    problems: { 503: 'The agent bundle is not available (`agent_bundle_unavailable`).' },
  })
  async agent(
    @Req() req: Request,
    @Res({ passthrough: true }) res: Response,
  ): Promise<StreamableFile | undefined> {
    const { bytes, sha256 } = await this.install.agentBundle();
    const etag = `"${sha256}"`;
    res.setHeader('ETag', etag);
    res.setHeader('Cache-Control', REVALIDATE);
    const tags = req.headers['if-none-match']?.split(',').map((tag) => tag.trim().replace(/^W\//, '')) ?? [];
    if (tags.includes(etag) || tags.includes('*')) {
      res.status(304);
      return undefined;
    }
    return new StreamableFile(bytes, { type: 'text/javascript; charset=utf-8', length: bytes.length });
  }

  @Post('api/v1/tunnel/install-command')
  @RequireScopes('tunnel:write')
  @ApiDoc({
    summary: 'The install commands for a join token',
    tag: 'Tunnel',
    body: 'InstallCommandRequest',
    responses: { 200: 'InstallCommand' },
    problems: {
      503: 'The database, the agent CA or the registry URL is not ready (`unavailable`, `install_unavailable`).',
    },
  })
  @HttpCode(200)
  installCommand(@Caller() caller: Caller, @Body() body: InstallCommandDto): Promise<InstallCommand> {
    return this.install.installCommand(caller, body.token);
  }
}
