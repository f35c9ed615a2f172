import { Injectable, type OnModuleInit } from '@nestjs/common';
import { AgentEndpoints } from '../agent-gateway/agent-endpoints.js';
import { TunnelSupervisor } from './tunnel-supervisor.js';

/**
 * True when a request's Host header names the tunnel's public URL: the caller came through the
 * relay (a reverse proxy there must pass the Host header on, as it must for the published
 * subdomains). Compared as `host[:port]` with the URL's default port left out.
 */
export function cameThroughTunnel(publicUrl: string, hostHeader: string): boolean {
  // Only a name or address and a port: no path, credentials or anything else URL parsing would drop.
  if (!/^[A-Za-z0-9.\-_:[\]]+$/.test(hostHeader)) return false;
  try {
    const url = new URL(publicUrl);
    return new URL(`${url.protocol}//${hostHeader}`).host === url.host;
  } catch {
    return false;
  }
}

/**
 * An agent that enrolls through the running tunnel's public URL is told to dial the tunnel's agent
 * endpoint: behind NAT it could not reach the direct one. Agents that used any other address keep
 * the direct endpoint, also while the tunnel runs.
 */
@Injectable()
export class TunnelAgentRoute implements OnModuleInit {
  constructor(
    private readonly supervisor: TunnelSupervisor,
    private readonly endpoints: AgentEndpoints,
  ) {}

  onModuleInit(): void {
    this.endpoints.register((host) => this.endpointFor(host));
  }

  async endpointFor(host: string): Promise<string | undefined> {
    const status = await this.supervisor.status();
    if (status.state !== 'running' || !status.public_url || !status.agent_endpoint) return undefined;
    return cameThroughTunnel(status.public_url, host) ? status.agent_endpoint : undefined;
  }
}
