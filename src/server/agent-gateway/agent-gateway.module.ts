import { Module } from '@nestjs/common';
import { HealthModule } from '../health/health.module.js';
import { AgentSessions } from './agent-sessions.js';
import { CaRepository } from './ca.repository.js';
import { CaService } from './ca.service.js';
import { CertificatesService } from './certificates.service.js';
import { GatewayServer } from './gateway.server.js';

@Module({
  imports: [HealthModule],
  providers: [CaService, CaRepository, CertificatesService, AgentSessions, GatewayServer],
  exports: [CaService, CertificatesService, AgentSessions, GatewayServer],
})
export class AgentGatewayModule {}
