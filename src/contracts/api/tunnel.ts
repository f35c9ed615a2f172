// The tunnel API's wire shapes (/api/v1/tunnel, CONTRACT.md "Tunnel and MCP"). Types only.
import type { Timestamp } from './common.js';

export type TunnelState = 'stopped' | 'starting' | 'running' | 'reconnecting' | 'stopping' | 'error';
export type TunnelProviderName = 'ssh' | 'cloudflared';

export interface TunnelStatus {
  state: TunnelState;
  provider: TunnelProviderName;
  public_url: string | null;
  agent_endpoint: string | null;
  started_at: Timestamp | null;
  last_error: string | null;
}

export interface RegistryUrl {
  url: string;
  source: 'tunnel' | 'custom' | 'config';
}

export interface TopologyEnvironment {
  kind: 'bare-metal' | 'vm' | 'container' | 'kubernetes';
  evidence: string[];
}

export interface Topology {
  environment: TopologyEnvironment;
  /** A STUN server saw an address that is not this machine's; false when unknown (the reason says so). */
  has_nat: boolean;
  local_ips: string[];
  public_ip: string | null;
  default_gateway: string | null;
  private_subnet: string | null;
  recommended_mode: 'direct' | 'tunnel';
  reason: string;
}

export interface TunnelSubdomain {
  base_id: string;
  subdomain: string;
  url: string;
  created_at: Timestamp;
}

export interface TunnelSubdomainList {
  subdomains: TunnelSubdomain[];
}

export interface TunnelService {
  name: string;
  subdomain: string;
  url: string;
  target: string;
}

export interface TunnelSubdomainServices {
  base_id: string;
  services: TunnelService[];
}

export interface UrlCheck {
  name: string;
  ok: boolean;
  detail: string;
}

export interface UrlValidation {
  url: string | null;
  valid: boolean;
  reachable: boolean;
  checks: UrlCheck[];
}

export interface ValidateUrlRequest {
  url?: string;
  /** false: check only; by default a valid, reachable URL becomes the custom public URL. */
  save?: boolean;
}

export interface InstallCommandRequest {
  token: string;
}

export interface InstallCommand {
  linux: string;
  windows: string;
  registry_url: string;
  ca_fingerprint: string;
  expires_at: Timestamp;
}

/** GET /.well-known/stack-orchestrator: who answers at a URL. */
export interface InstanceIdentity {
  instance_id: string;
  version: string;
}
