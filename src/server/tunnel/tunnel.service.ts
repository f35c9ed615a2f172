import { Injectable } from '@nestjs/common';
import { isIP } from 'node:net';
import { AuditService } from '../audit/audit.service.js';
import { operatorOnly } from '../auth/auth.errors.js';
import { isOperator } from '../auth/operator.js';
import { NotFoundError } from '../common/app-error.js';
import type { Caller } from '../common/request-context.js';
import { SERVICE_VERSION } from '../common/version.js';
import { AppConfig } from '../config/config.js';
import type {
  InstanceIdentity,
  RegistryUrl,
  Topology,
  TunnelStatus,
  TunnelSubdomainList,
  TunnelSubdomainServices,
  UrlValidation,
} from '../../contracts/api/tunnel.js';
import type { ValidateUrlDto } from './dto/validate-url.dto.js';
import { TopologyService } from './topology/topology.service.js';
import { TunnelSupervisor } from './tunnel-supervisor.js';
import { TunnelRepository } from './tunnel.repository.js';
import { validateTunnelUrl } from './url-check/validate-url.js';

/**
 * The tunnel is the instance's, not a tenant's: starting and stopping it, and saving the custom URL
 * every installer and agent is given, are for the operator owner's clients (with `tunnel:write`).
 * Other owners read the status, registry URL and topology, their own subdomains, and may check a URL
 * without saving it (docs/tunnel.md, "Who may change the tunnel").
 */
const INSTANCE_WIDE =
  "The tunnel and its custom URL are the instance's: only the operator owner's clients may change them.";

/** The tunnel API's rules: start and stop, where this instance is reachable, subdomains, URL checks. */
@Injectable()
export class TunnelService {
  constructor(
    private readonly supervisor: TunnelSupervisor,
    private readonly repository: TunnelRepository,
    private readonly topologyService: TopologyService,
    private readonly audit: AuditService,
    private readonly config: AppConfig,
  ) {}

  status(): Promise<TunnelStatus> {
    return this.supervisor.status();
  }

  async start(caller: Caller): Promise<TunnelStatus> {
    if (!isOperator(caller)) throw operatorOnly(INSTANCE_WIDE);
    const { changed, status } = await this.supervisor.start();
    if (changed)
      await this.audit.record({
        action: 'tunnel.started',
        actor: caller.clientId,
        details: { provider: status.provider },
      });
    return status;
  }

  async stop(caller: Caller): Promise<TunnelStatus> {
    if (!isOperator(caller)) throw operatorOnly(INSTANCE_WIDE);
    const { changed, status } = await this.supervisor.stop();
    if (changed) await this.audit.record({ action: 'tunnel.stopped', actor: caller.clientId });
    return status;
  }

  /** Where agents and browsers should reach this instance: the tunnel, a validated URL, or PUBLIC_URL. */
  async registryUrl(): Promise<RegistryUrl> {
    const tunnelUrl = await this.supervisor.runningUrl();
    if (tunnelUrl) return { url: tunnelUrl, source: 'tunnel' };
    const { customUrl } = await this.repository.state();
    if (customUrl) return { url: customUrl, source: 'custom' };
    return { url: this.config.publicUrl, source: 'config' };
  }

  async identity(): Promise<InstanceIdentity> {
    return { instance_id: await this.repository.instanceId(), version: SERVICE_VERSION };
  }

  topology(): Promise<Topology> {
    return this.topologyService.detect();
  }

  /** The caller's owner's base subdomain (one per owner, once it published); never another owner's. */
  async subdomains(caller: Caller): Promise<TunnelSubdomainList> {
    const base = await this.repository.baseOf(caller.owner);
    const bases = base ? [base] : [];
    return {
      subdomains: bases.map((b) => {
        const host = this.hostOf(b.baseId);
        return {
          base_id: b.baseId,
          subdomain: host,
          url: this.urlOf(host),
          created_at: b.createdAt.toISOString(),
        };
      }),
    };
  }

  /** Services under one of the caller's bases; another owner's base is not found, never forbidden. */
  async subdomainServices(caller: Caller, baseId: string): Promise<TunnelSubdomainServices> {
    const base = await this.repository.baseOf(caller.owner);
    if (!base || base.baseId !== baseId) throw new NotFoundError(`No base subdomain ${baseId}.`);
    const services = await this.repository.services(base.baseId);
    return {
      base_id: base.baseId,
      services: services.map((s) => {
        const host = this.hostOf(s.subdomain);
        const targetHost = isIP(s.targetHost) === 6 ? `[${s.targetHost}]` : s.targetHost;
        return {
          name: s.service,
          subdomain: host,
          url: this.urlOf(host),
          target: `${targetHost}:${s.targetPort}`,
        };
      }),
    };
  }

  /** Checks a URL; a valid one that answers as this instance becomes the custom URL unless save is false. */
  /**
   * A valid, reachable URL becomes the custom URL unless `save` is false, for the operator owner's
   * clients; another owner's client only checks (and is refused `save: true`).
   */
  async validateUrl(caller: Caller, body: ValidateUrlDto): Promise<UrlValidation> {
    const operator = isOperator(caller);
    if (body.save === true && !operator) throw operatorOnly(INSTANCE_WIDE);
    const result = await validateTunnelUrl(body.url, {
      allowPrivate: this.config.tunnel.allowPrivateUrls,
      instanceId: await this.repository.instanceId(),
    });
    if (operator && result.valid && result.reachable && result.url && body.save !== false) {
      const { customUrl } = await this.repository.state();
      if (customUrl !== result.url) {
        await this.repository.setCustomUrl(result.url);
        await this.audit.record({
          action: 'tunnel.custom_url_changed',
          actor: caller.clientId,
          details: { url: result.url, previous: customUrl },
        });
      }
    }
    return result;
  }

  /** `<label>.<TUNNEL_BASE_DOMAIN>` (a base id, or `<service>-<stack>.<base_id>`), or the bare label without a domain. */
  hostOf(label: string): string {
    return this.config.tunnel.baseDomain ? `${label}.${this.config.tunnel.baseDomain}` : label;
  }

  private urlOf(host: string): string {
    const publicUrl = this.config.tunnel.publicUrl;
    const scheme = publicUrl ? new URL(publicUrl).protocol : 'https:';
    return `${scheme}//${host}`;
  }
}
