import { Controller, Get } from '@nestjs/common';
import { Public } from '../auth/auth.decorators.js';
import type { InstanceIdentity } from '../../contracts/api/tunnel.js';
import { TunnelService } from './tunnel.service.js';
import { ApiDoc } from '../openapi/api-doc.js';

/** Who answers at a URL: validate-url calls this on the URL it checks (CONTRACT.md). */
@Controller('.well-known')
export class WellKnownController {
  constructor(private readonly tunnel: TunnelService) {}

  @Get('stack-orchestrator')
  @Public()
  @ApiDoc({ summary: 'Who answers at this URL', tag: 'Tunnel', responses: { 200: 'InstanceIdentity' } })
  identity(): Promise<InstanceIdentity> {
    return this.tunnel.identity();
  }
}
