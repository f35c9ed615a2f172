import { Module } from '@nestjs/common';
import { AgentGatewayModule } from '../agent-gateway/agent-gateway.module.js';
import { StacksModule } from '../stacks/stacks.module.js';
import { WorkersModule } from '../workers/workers.module.js';
import { TunnelIngress } from './ingress/tunnel-ingress.js';
import { AgentBundle } from './install/agent-bundle.js';
import { InstallController } from './install/install.controller.js';
import { InstallScripts } from './install/install-scripts.js';
import { InstallService } from './install/install.service.js';
import { PublishedServices } from './published-services.js';
import { TopologyService } from './topology/topology.service.js';
import { TunnelController } from './tunnel.controller.js';
import { TunnelProviders } from './tunnel-providers.js';
import { TunnelRepository } from './tunnel.repository.js';
import { TunnelService } from './tunnel.service.js';
import { TunnelSupervisor } from './tunnel-supervisor.js';
import { WellKnownController } from './well-known.controller.js';

/** The tunnel API, its supervisor, the ingress for published services, and the install command. */
@Module({
  imports: [AgentGatewayModule, WorkersModule, StacksModule],
  controllers: [TunnelController, WellKnownController, InstallController],
  providers: [
    TunnelService,
    TunnelRepository,
    TunnelSupervisor,
    TunnelProviders,
    TopologyService,
    TunnelIngress,
    PublishedServices,
    InstallService,
    { provide: AgentBundle, useFactory: () => new AgentBundle() },
    { provide: InstallScripts, useFactory: () => new InstallScripts() },
  ],
  exports: [TunnelService, TunnelIngress],
})
export class TunnelModule {}
