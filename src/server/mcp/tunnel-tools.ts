import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import * as z from 'zod/v4';
import type { Caller } from '../common/request-context.js';
import { TunnelService } from '../tunnel/tunnel.service.js';
import { toolResult, type ToolScope } from './tool-result.js';

/**
 * The interface document's eight tunnel tools (part 4, last column), with exactly its names. Each
 * calls the TunnelService method its HTTP route calls, with the caller's own scopes and owner.
 */
export function registerTunnelTools(
  server: McpServer,
  tunnel: TunnelService,
  caller: Caller,
  may: ToolScope,
): void {
  const read = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };
  if (may('tunnel:read')) {
    server.registerTool(
      'get_tunnel_status',
      {
        description:
          'The public tunnel: state (stopped, starting, running, reconnecting, stopping, error), provider, public URL, agent endpoint, since when, and the last error in words.',
        annotations: read,
      },
      () => toolResult(() => tunnel.status()),
    );
    server.registerTool(
      'get_tunnel_registry_url',
      {
        description:
          'Where agents and browsers reach this instance: the running tunnel, a validated custom URL, or PUBLIC_URL, with which one it is.',
        annotations: read,
      },
      () => toolResult(() => tunnel.registryUrl()),
    );
    server.registerTool(
      'get_topology',
      {
        description:
          "This instance's network: local addresses, default gateway, private subnet, environment (bare metal, VM, container, Kubernetes) with evidence, public address by STUN, NAT, and whether to use the tunnel, with a reason.",
        annotations: { ...read, openWorldHint: true },
      },
      () => toolResult(() => tunnel.topology()),
    );
    server.registerTool(
      'list_tunnel_subdomains',
      {
        description: "The caller's own base subdomains for published stack services.",
        annotations: read,
      },
      () => toolResult(() => tunnel.subdomains(caller)),
    );
    server.registerTool(
      'list_tunnel_subdomain_services',
      {
        description:
          "The stack services published under one of the caller's base subdomains, with their URLs and targets.",
        inputSchema: { base_id: z.string().min(1).max(64).describe('A base_id from list_tunnel_subdomains') },
        annotations: read,
      },
      ({ base_id }) => toolResult(() => tunnel.subdomainServices(caller, base_id)),
    );
  }
  if (may('tunnel:write')) {
    server.registerTool(
      'start_tunnel',
      {
        description:
          'Starts the public tunnel (idempotent) and answers its status; it stays started across restarts.',
        annotations: {
          readOnlyHint: false,
          destructiveHint: false,
          idempotentHint: true,
          openWorldHint: true,
        },
      },
      () => toolResult(() => tunnel.start(caller)),
    );
    server.registerTool(
      'stop_tunnel',
      {
        description:
          'Stops the public tunnel (idempotent) and answers its status. Agents connected through it lose their link.',
        annotations: {
          readOnlyHint: false,
          destructiveHint: true,
          idempotentHint: true,
          openWorldHint: true,
        },
      },
      () => toolResult(() => tunnel.stop(caller)),
    );
    server.registerTool(
      'validate_tunnel_url',
      {
        description:
          'Checks a custom public URL (http(s), no credentials, no private or metadata address, answers as this instance); a valid, reachable one becomes the custom URL unless save is false.',
        inputSchema: {
          url: z.string().max(2048).describe('The URL to check, e.g. https://orchestrator.example.com'),
          save: z
            .boolean()
            .optional()
            .describe('false: only check; by default a valid, reachable URL is stored'),
        },
        annotations: {
          readOnlyHint: false,
          destructiveHint: false,
          idempotentHint: true,
          openWorldHint: true,
        },
      },
      ({ url, save }) => toolResult(() => tunnel.validateUrl(caller, { url, save })),
    );
  }
}
