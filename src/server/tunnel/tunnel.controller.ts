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

/** The tunnel API (interface document part 4): under /api/v1 only. */
@Controller('api/v1/tunnel')
export class TunnelController {
  constructor(private readonly tunnel: TunnelService) {}

  @Get('status')
  @RequireScopes('tunnel:read')
  status(): Promise<TunnelStatus> {
    return this.tunnel.status();
  }

  @Post('start')
  @HttpCode(200)
  @RequireScopes('tunnel:write')
  start(@Caller() caller: Caller): Promise<TunnelStatus> {
    return this.tunnel.start(caller);
  }

  @Post('stop')
  @HttpCode(200)
  @RequireScopes('tunnel:write')
  stop(@Caller() caller: Caller): Promise<TunnelStatus> {
    return this.tunnel.stop(caller);
  }

  @Get('registry-url')
  @RequireScopes('tunnel:read')
  registryUrl(): Promise<RegistryUrl> {
    return this.tunnel.registryUrl();
  }

  @Get('topology')
  @RequireScopes('tunnel:read')
  topology(): Promise<Topology> {
    return this.tunnel.topology();
  }

  @Get('subdomains')
  @RequireScopes('tunnel:read')
  subdomains(@Caller() caller: Caller): Promise<TunnelSubdomainList> {
    return this.tunnel.subdomains(caller);
  }

  @Get('subdomains/:baseId/services')
  @RequireScopes('tunnel:read')
  subdomainServices(
    @Caller() caller: Caller,
    @Param('baseId') baseId: string,
  ): Promise<TunnelSubdomainServices> {
    return this.tunnel.subdomainServices(caller, baseId);
  }

  @Post('validate-url')
  @HttpCode(200)
  @RequireScopes('tunnel:write')
  validateUrl(@Caller() caller: Caller, @Body() body: ValidateUrlDto): Promise<UrlValidation> {
    return this.tunnel.validateUrl(caller, body);
  }
}
