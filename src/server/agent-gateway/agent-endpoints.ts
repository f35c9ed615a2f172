import { Injectable } from '@nestjs/common';
import { GatewayServer } from './gateway.server.js';

/** An agent endpoint (`host:port`) for enrollments whose request named `host`, or undefined if not this route's. */
export type AgentRoute = (host: string) => Promise<string | undefined>;

/**
 * Which endpoint an enrolling agent is told to dial. The gateway's own (PUBLIC_URL's host, the agent
 * port) unless a feature that carries the agent port elsewhere recognises the request: the tunnel
 * registers a route for agents that enrolled through its public URL, which would not reach the
 * direct address from behind their NAT. The agent keeps what it was told (its identity file).
 */
@Injectable()
export class AgentEndpoints {
  private readonly routes: AgentRoute[] = [];

  constructor(private readonly gateway: GatewayServer) {}

  register(route: AgentRoute): void {
    this.routes.push(route);
  }

  /** The endpoint for an enrollment request with this Host header. */
  async forRequest(host: string | undefined): Promise<string> {
    if (host)
      for (const route of this.routes) {
        const endpoint = await route(host);
        if (endpoint) return endpoint;
      }
    return this.gateway.endpoint;
  }
}
