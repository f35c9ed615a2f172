import { Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import type { IncomingMessage, RequestListener, Server, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { AppConfig } from '../../config/config.js';
import { TunnelRepository } from '../tunnel.repository.js';
import { matchIngressHost } from './host-match.js';
import { IngressProxy, type IngressTarget } from './reverse-proxy.js';

/** A published service is looked up at most this often per host on one replica. */
const CACHE_MS = 2000;
const CACHE_MAX = 10_000;

/**
 * Requests for a published subdomain of TUNNEL_BASE_DOMAIN go to that stack service on its worker;
 * everything else goes to the API. Installed on the HTTP server ahead of Express, so the API's body
 * parsers, limits and headers never touch proxied traffic.
 */
@Injectable()
export class TunnelIngress implements OnModuleDestroy {
  private readonly logger = new Logger('tunnel');
  private readonly cache = new Map<string, { target: IngressTarget | undefined; at: number }>();
  private readonly proxy: IngressProxy;

  constructor(
    private readonly repository: TunnelRepository,
    private readonly config: AppConfig,
  ) {
    this.proxy = new IngressProxy({
      resolve: (host) => this.resolve(host),
      logger: { warn: (fields, msg) => this.logger.warn(fields, msg) },
    });
  }

  onModuleDestroy(): void {
    this.proxy.close();
  }

  /** Wraps the server's request listener and takes its upgrade events. */
  install(server: Server): void {
    const baseDomain = this.config.tunnel.baseDomain;
    if (!baseDomain) return;
    const [next] = server.listeners('request') as RequestListener[];
    server.removeAllListeners('request');
    server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      const host = matchIngressHost(req.headers.host, baseDomain);
      if (host === undefined) next(req, res);
      else void this.proxy.handle(req, res, host);
    });
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      const host = matchIngressHost(req.headers.host, baseDomain);
      if (host !== undefined) void this.proxy.upgrade(req, socket, head, host);
      // The API serves no upgrades: anything else is refused by closing the socket.
      else socket.destroy();
    });
  }

  /** Forgets cached lookups (after a deploy or destroy on this replica). */
  forget(): void {
    this.cache.clear();
  }

  private async resolve(host: string): Promise<IngressTarget | undefined> {
    const now = Date.now();
    const hit = this.cache.get(host);
    if (hit && now - hit.at < CACHE_MS) return hit.target;
    // Registrations are stored without the domain (published-services.ts); the host ends with it.
    const domain = this.config.tunnel.baseDomain ?? '';
    const row = await this.repository.serviceByHost(host.slice(0, host.length - domain.length - 1));
    const target = row && {
      host: row.targetHost,
      port: row.targetPort,
      service: row.service,
      stack: row.stackName,
    };
    if (this.cache.size >= CACHE_MAX) this.cache.clear();
    this.cache.set(host, { target, at: now });
    return target;
  }
}
