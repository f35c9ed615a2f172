import { Module } from '@nestjs/common';
import { AgentGatewayModule } from '../../agent-gateway/agent-gateway.module.js';
import { JoinTokensRepository } from '../../workers/join-tokens.repository.js';
import { JoinTokensService } from '../../workers/join-tokens.service.js';
import { AgentBundle } from './agent-bundle.js';
import { InstallController } from './install.controller.js';
import { InstallScripts } from './install-scripts.js';
import { InstallService } from './install.service.js';
import { RegistryUrlSource } from './registry-url-source.js';

/**
 * install.sh, install.ps1, the agent download and the install command. The join tokens are read
 * through a JoinTokensService of this module's own (WorkersModule does not export its instance; the
 * service keeps no state). The tunnel module replaces RegistryUrlSource when it comes.
 */
@Module({
  imports: [AgentGatewayModule],
  controllers: [InstallController],
  providers: [
    InstallService,
    RegistryUrlSource,
    JoinTokensService,
    JoinTokensRepository,
    { provide: AgentBundle, useFactory: () => new AgentBundle() },
    { provide: InstallScripts, useFactory: () => new InstallScripts() },
  ],
  exports: [RegistryUrlSource],
})
export class InstallModule {}
