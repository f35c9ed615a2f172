import { Module } from '@nestjs/common';
import { HealthModule } from '../health/health.module.js';
import { AgentEndpoints } from './agent-endpoints.js';
import { AgentSessions } from './agent-sessions.js';
import { CaRepository } from './ca.repository.js';
import { CaService } from './ca.service.js';
import { CertificatesService } from './certificates.service.js';
import { CommandRelay } from './command-relay.js';
import { GatewayServer } from './gateway.server.js';
import { SessionDirectory } from './session-directory.js';

@Module({
  imports: [HealthModule],
  providers: [
    CaService,
    CaRepository,
    CertificatesService,
    AgentSessions,
    SessionDirectory,
    CommandRelay,
    GatewayServer,
    AgentEndpoints,
  ],
  exports: [
    CaService,
    CertificatesService,
    AgentSessions,
    SessionDirectory,
    CommandRelay,
    GatewayServer,
    AgentEndpoints,
  ],
})
export class AgentGatewayModule {}
