import * as z from 'zod/v4';
import { TunnelService } from '../tunnel/tunnel.service.js';
import * as out from './schemas/tunnel.js';
import { defineTool, READ_ONLY, type McpTool } from './tool.js';

/** Annotations of a tunnel change: it reaches outside this instance (the relay, the URL checked). */
const CHANGES_TUNNEL = {
  readOnlyHint: false,
  destructiveHint: false,
  idempotentHint: true,
  openWorldHint: true,
};

/**
 * The interface document's eight tunnel tools (part 4, last column), with exactly its names. Each
 * calls the TunnelService method its HTTP route calls, with the caller's own scopes and owner.
 */
export function tunnelTools(tunnel: TunnelService): McpTool[] {
  return [
    defineTool({
      name: 'get_tunnel_status',
      title: 'Tunnel status',
      description:
        'The public tunnel: state (stopped, starting, running, reconnecting, stopping, error), provider, public URL, agent endpoint, since when, and the last error in words.',
      scope: 'tunnel:read',
      input: {},
      output: out.tunnelStatus,
      annotations: READ_ONLY,
      run: () => tunnel.status(),
    }),
    defineTool({
      name: 'get_tunnel_registry_url',
      title: 'Registry URL',
      description:
        'Where agents and browsers reach this instance: the running tunnel, a validated custom URL, or PUBLIC_URL, with which one it is.',
      scope: 'tunnel:read',
      input: {},
      output: out.registryUrl,
      annotations: READ_ONLY,
      run: () => tunnel.registryUrl(),
    }),
    defineTool({
      name: 'get_topology',
      title: 'Network topology',
      description:
        "This instance's network: local addresses, default gateway, private subnet, environment (bare metal, VM, container, Kubernetes) with evidence, public address by STUN, NAT, and whether to use the tunnel, with a reason.",
      scope: 'tunnel:read',
      input: {},
      output: out.topology,
      annotations: { ...READ_ONLY, openWorldHint: true },
      run: () => tunnel.topology(),
    }),
    defineTool({
      name: 'list_tunnel_subdomains',
      title: 'Tunnel subdomains',
      description: "The caller's own base subdomains for published stack services.",
      scope: 'tunnel:read',
      input: {},
      output: out.subdomainList,
      annotations: READ_ONLY,
      run: (_args, caller) => tunnel.subdomains(caller),
    }),
    defineTool({
      name: 'list_tunnel_subdomain_services',
      title: 'Services under a subdomain',
      description:
        "The stack services published under one of the caller's base subdomains, with their URLs and targets.",
      scope: 'tunnel:read',
      input: { base_id: z.string().min(1).max(64).describe('A base_id from list_tunnel_subdomains') },
      output: out.subdomainServices,
      annotations: READ_ONLY,
      run: ({ base_id }, caller) => tunnel.subdomainServices(caller, base_id),
    }),
    defineTool({
      name: 'start_tunnel',
      title: 'Start the tunnel',
      description:
        'Starts the public tunnel (idempotent) and answers its status; it stays started across restarts.',
      scope: 'tunnel:write',
      input: {},
      output: out.tunnelStatus,
      annotations: CHANGES_TUNNEL,
      run: (_args, caller) => tunnel.start(caller),
    }),
    defineTool({
      name: 'stop_tunnel',
      title: 'Stop the tunnel',
      description:
        'Stops the public tunnel (idempotent) and answers its status. Agents connected through it lose their link.',
      scope: 'tunnel:write',
      input: {},
      output: out.tunnelStatus,
      annotations: { ...CHANGES_TUNNEL, destructiveHint: true },
      run: (_args, caller) => tunnel.stop(caller),
    }),
    defineTool({
      name: 'validate_tunnel_url',
      title: 'Validate a custom URL',
      description:
        "Checks a custom public URL (http(s), no credentials, no private or metadata address, answers as this instance); a valid, reachable one becomes the custom URL unless save is false. Only the operator owner's clients save; another owner's only check.",
      scope: 'tunnel:write',
      input: {
        url: z.string().max(2048).describe('The URL to check, e.g. https://orchestrator.example.com'),
        save: z
          .boolean()
          .optional()
          .describe(
            "false: only check; by default a valid, reachable URL is stored (the operator owner's clients only)",
          ),
      },
      output: out.urlValidation,
      annotations: CHANGES_TUNNEL,
      run: ({ url, save }, caller) => tunnel.validateUrl(caller, { url, save }),
    }),
  ];
}
