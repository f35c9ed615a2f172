import { Body, Controller, Get, HttpCode, Param, Post } from '@nestjs/common';
import { Caller, RequireScopes } from '../auth/auth.decorators.js';
import type {
  RegistryUrl,
  Topology,
  TunnelStatus,
  TunnelSubdomainList,
  TunnelSubdomainServices,
  UrlValidation,
} from '../../contracts/api/tunnel.js';
import { ValidateUrlDto } from './dto/validate-url.dto.js';
import { TunnelService } from './tunnel.service.js';
import { ApiDoc } from '../openapi/api-doc.js';

/** The tunnel API (interface document part 4): under /api/v1 only. */
@Controller('api/v1/tunnel')
export class TunnelController {
  constructor(private readonly tunnel: TunnelService) {}

  @Get('status')
  @RequireScopes('tunnel:read')
  @ApiDoc({ summary: 'Tunnel status', tag: 'Tunnel', responses: { 200: 'TunnelStatus' } })
  status(): Promise<TunnelStatus> {
    return this.tunnel.status();
  }

  @Post('start')
  @HttpCode(200)
  @RequireScopes('tunnel:write')
  @ApiDoc({
    summary: 'Start the tunnel',
    tag: 'Tunnel',
    responses: { 200: 'TunnelStatus' },
    problems: {
      403: "The token lacks the scope, or its client is not the operator owner's (`forbidden`): the tunnel is the instance's.",
      409: 'The tunnel is not configured (`conflict`, "Tunnel not configured").',
    },
  })
  start(@Caller() caller: Caller): Promise<TunnelStatus> {
    return this.tunnel.start(caller);
  }

  @Post('stop')
  @HttpCode(200)
  @RequireScopes('tunnel:write')
  @ApiDoc({
    summary: 'Stop the tunnel',
    tag: 'Tunnel',
    responses: { 200: 'TunnelStatus' },
    problems: {
      403: "The token lacks the scope, or its client is not the operator owner's (`forbidden`): the tunnel is the instance's.",
    },
  })
  stop(@Caller() caller: Caller): Promise<TunnelStatus> {
    return this.tunnel.stop(caller);
  }

  @Get('registry-url')
  @RequireScopes('tunnel:read')
  @ApiDoc({
    summary: 'The URL agents and installers should use',
    tag: 'Tunnel',
    responses: { 200: 'RegistryUrl' },
  })
  registryUrl(): Promise<RegistryUrl> {
    return this.tunnel.registryUrl();
  }

  @Get('topology')
  @RequireScopes('tunnel:read')
  @ApiDoc({
    summary: "This machine's network topology and the recommended mode",
    tag: 'Tunnel',
    responses: { 200: 'Topology' },
  })
  topology(): Promise<Topology> {
    return this.tunnel.topology();
  }

  @Get('subdomains')
  @RequireScopes('tunnel:read')
  @ApiDoc({
    summary: "The caller's base subdomains",
    tag: 'Tunnel',
    responses: { 200: 'TunnelSubdomainList' },
  })
  subdomains(@Caller() caller: Caller): Promise<TunnelSubdomainList> {
    return this.tunnel.subdomains(caller);
  }

  @Get('subdomains/:baseId/services')
  @RequireScopes('tunnel:read')
  @ApiDoc({
    summary: 'The services published under a base subdomain',
    tag: 'Tunnel',
    responses: { 200: 'TunnelSubdomainServices' },
  })
  subdomainServices(
    @Caller() caller: Caller,
    @Param('baseId') baseId: string,
  ): Promise<TunnelSubdomainServices> {
    return this.tunnel.subdomainServices(caller, baseId);
  }

  @Post('validate-url')
  @HttpCode(200)
  @RequireScopes('tunnel:write')
  @ApiDoc({
    summary: 'Check a public URL (and save it as the custom URL)',
    description:
      "Without `url`, answers valid:false (no URL was given). The checks refuse private and metadata addresses. Only the operator owner's clients save the URL; another owner's client only checks, and `save: true` from it is a 403.",
    tag: 'Tunnel',
    body: 'ValidateUrlRequest',
    responses: { 200: 'UrlValidation' },
  })
  validateUrl(@Caller() caller: Caller, @Body() body: ValidateUrlDto): Promise<UrlValidation> {
    return this.tunnel.validateUrl(caller, body);
  }
}
