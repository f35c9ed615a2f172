import { Injectable, Logger } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { Server } from 'node:http';
import { GatewayServer } from '../agent-gateway/gateway.server.js';
import { AppConfig } from '../config/config.js';
import { CloudflaredTunnelProvider } from './providers/cloudflared-provider.js';
import { SshTunnelProvider } from './providers/ssh-provider.js';
import type { TunnelLogger, TunnelProvider } from './providers/tunnel-provider.js';

/**
 * Builds the configured provider with this replica's own ports: the HTTP port and the agent port
 * are those actually bound (a test binds port 0), so the provider is built when first needed.
 */
@Injectable()
export class TunnelProviders {
  private readonly logger = new Logger('tunnel');
  private provider: TunnelProvider | undefined;

  constructor(
    private readonly config: AppConfig,
    private readonly http: HttpAdapterHost,
    private readonly gateway: GatewayServer,
  ) {}

  current(): TunnelProvider {
    this.provider ??= this.build();
    return this.provider;
  }

  private build(): TunnelProvider {
    const tunnel = this.config.tunnel;
    const logger: TunnelLogger = {
      log: (fields, msg) => this.logger.log(fields, msg),
      warn: (fields, msg) => this.logger.warn(fields, msg),
      debug: (fields, msg) => this.logger.debug(fields, msg),
    };
    const localHttpPort = this.httpPort();
    if (tunnel.provider === 'cloudflared')
      return new CloudflaredTunnelProvider({
        localHttpPort,
        token: tunnel.cloudflared.token,
        publicUrl: tunnel.publicUrl,
        binary: tunnel.cloudflared.bin,
        parentEnv: this.config.processEnvironment,
        logger,
      });
    return new SshTunnelProvider({
      settings: { ...tunnel.ssh, publicUrl: tunnel.publicUrl },
      localHttpPort,
      localAgentPort: this.gateway.port || this.config.agentPort,
      remoteBindAddress: tunnel.ssh.bindAddress,
      agentPublicHost: tunnel.agentHost,
      logger,
    });
  }

  private httpPort(): number {
    const server = this.http.httpAdapter?.getHttpServer() as Server | undefined;
    const address = server?.address();
    return typeof address === 'object' && address ? address.port : this.config.port;
  }
}
