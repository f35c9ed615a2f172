import { Injectable } from '@nestjs/common';
import type { InstallCommand } from '../../../contracts/api/tunnel.js';
import { CaService } from '../../agent-gateway/ca.service.js';
import { AppError, ValidationFailedError } from '../../common/app-error.js';
import type { Caller } from '../../common/request-context.js';
import { AppConfig } from '../../config/config.js';
import { JoinTokensService, TOKEN_FORMAT } from '../../workers/join-tokens.service.js';
import { AgentBundle, type AgentBundleFile } from './agent-bundle.js';
import { installCommands, InstallScripts, type InstallScriptName } from './install-scripts.js';
import { hostPort } from '../providers/provider-settings.js';
import { TunnelService } from '../tunnel.service.js';

/** The instance cannot hand out a working command yet; nothing the caller sent is wrong. */
export class InstallUnavailableError extends AppError {
  constructor(detail: string) {
    super(503, 'install_unavailable', 'Service Unavailable', detail, undefined, { 'Retry-After': '5' });
  }
}

const tokenError = (message: string) => new ValidationFailedError([{ path: 'token', message }]);

/**
 * The registry URL as the commands may use it: http(s), no credentials, query or fragment, no
 * trailing slash. Anything else is a configuration fault, not the caller's.
 */
export function commandRegistryUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new InstallUnavailableError('The registry URL is not a URL.');
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new InstallUnavailableError('The registry URL is not http or https.');
  }
  if (parsed.username || parsed.password || parsed.search || parsed.hash) {
    throw new InstallUnavailableError('The registry URL carries credentials, a query or a fragment.');
  }
  return parsed.href.replace(/\/+$/, '');
}

@Injectable()
export class InstallService {
  constructor(
    private readonly joinTokens: JoinTokensService,
    private readonly ca: CaService,
    private readonly tunnel: TunnelService,
    private readonly bundle: AgentBundle,
    private readonly scripts: InstallScripts,
    private readonly config: AppConfig,
  ) {}

  /**
   * The commands that install an agent with `token`, which must be a live join token of the caller's
   * owner. Showing them counts no use of the token.
   */
  async installCommand(caller: Caller, token: string): Promise<InstallCommand> {
    // Also checked by the DTO; here for callers that are not HTTP requests. No database before it.
    if (!TOKEN_FORMAT.test(token)) throw tokenError('token must be a join token');
    const expiresAt = await this.joinTokens.liveExpiry(caller.owner, token);
    if (!expiresAt) throw tokenError('token is not a live join token of yours: unknown, expired or revoked');
    const caFingerprint = this.ca.fingerprint;
    if (!caFingerprint) throw new InstallUnavailableError('The agent CA is not ready yet.');
    const registry = await this.tunnel.registryUrl();
    const registryUrl = commandRegistryUrl(registry.url);
    const { sha256 } = await this.bundle.load();
    // An agent installed through the tunnel keeps the tunnel's agent endpoint (enrollment names it):
    // behind NAT it may reach nothing else.
    const agentEndpoints =
      registry.source === 'tunnel' ? [] : this.config.agentEndpoints.map((e) => hostPort(e.host, e.port));
    // Quoting cannot fail here: the token's format, the URL's parse (which drops line breaks), hex
    // digests and checked host:port entries leave no NUL or line break in any value.
    return {
      ...installCommands({ registryUrl, token, caFingerprint, sha256, agentEndpoints }),
      registry_url: registryUrl,
      ca_fingerprint: caFingerprint,
      expires_at: expiresAt.toISOString(),
    };
  }

  script(name: InstallScriptName): string {
    return this.scripts.text(name);
  }

  agentBundle(): Promise<AgentBundleFile> {
    return this.bundle.load();
  }
}
