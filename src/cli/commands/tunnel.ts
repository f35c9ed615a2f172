import type { ApiClient } from '../api.js';
import type { Command } from '../args.js';
import { CliError } from '../errors.js';
import { readJoinToken } from '../join-token.js';
import { clean, printJson, table } from '../output.js';
import type { InstallCommandRequest, ValidateUrlRequest } from '../../contracts/api/index.js';
import { orDash, printFields, TUNNEL, unexpected } from './shared.js';
import {
  isInstallCommand,
  isRegistryUrl,
  isSubdomainList,
  isSubdomainServices,
  isTopology,
  isTunnelStatus,
  isUrlValidation,
  type TunnelStatus,
} from './views.js';

/** What each registry URL source means, for people. */
const SOURCES: Record<string, string> = {
  tunnel: "the running tunnel's public URL",
  custom: 'the custom URL stored by "stackctl tunnel validate-url"',
  config: "the service's PUBLIC_URL",
};

/** stackctl tunnel …: one command each, over the HTTP API. */
export async function runTunnel(
  api: ApiClient,
  command: Extract<Command, { name: `tunnel ${string}` }>,
  json: boolean,
): Promise<void> {
  switch (command.name) {
    case 'tunnel status':
      return printStatus(await status(api, 'GET', 'status'), json);
    case 'tunnel start': {
      const started = await status(api, 'POST', 'start');
      printStatus(started, json);
      // Reconnecting is the supervisor retrying by itself; error waits for the configuration to change.
      if (started.state === 'error')
        throw new CliError(`the tunnel cannot start: ${started.last_error ?? 'no reason given'}.`);
      return;
    }
    case 'tunnel stop':
      return printStatus(await status(api, 'POST', 'stop'), json);
    case 'tunnel registry-url': {
      const registry = await api.call('GET', `${TUNNEL}/registry-url`);
      if (!isRegistryUrl(registry)) throw unexpected('the registry URL');
      if (json) return printJson(registry);
      const meaning = SOURCES[registry.source];
      printFields([
        ['url', registry.url],
        ['source', meaning === undefined ? registry.source : `${registry.source} (${meaning})`],
      ]);
      return;
    }
    case 'tunnel topology': {
      const topology = await api.call('GET', `${TUNNEL}/topology`);
      if (!isTopology(topology)) throw unexpected('the topology');
      if (json) return printJson(topology);
      printFields([
        ['environment', topology.environment.kind],
        ['has_nat', topology.has_nat ? 'yes' : 'no'],
        ['public_ip', orDash(topology.public_ip)],
        ['local_ips', topology.local_ips.length === 0 ? '-' : topology.local_ips.join(', ')],
        ['default_gateway', orDash(topology.default_gateway)],
        ['private_subnet', orDash(topology.private_subnet)],
        ['recommended_mode', topology.recommended_mode],
        ['reason', topology.reason],
      ]);
      if (topology.environment.evidence.length > 0) {
        console.log('evidence:');
        for (const line of topology.environment.evidence) console.log(`  - ${clean(line)}`);
      }
      return;
    }
    case 'tunnel subdomains': {
      const list = await api.call('GET', `${TUNNEL}/subdomains`);
      if (!isSubdomainList(list)) throw unexpected('the subdomain list');
      if (json) return printJson(list);
      return printRows(
        'No base subdomains: one is created when a stack publishes a service.',
        ['BASE_ID', 'SUBDOMAIN', 'URL', 'CREATED_AT'],
        list.subdomains.map((s) => [s.base_id, s.subdomain, s.url, s.created_at]),
      );
    }
    case 'tunnel services': {
      const path = `${TUNNEL}/subdomains/${encodeURIComponent(command.baseId)}/services`;
      const answer = await api.call('GET', path);
      if (!isSubdomainServices(answer)) throw unexpected('the published services');
      if (json) return printJson(answer);
      return printRows(
        `No published services under ${clean(answer.base_id)}.`,
        ['NAME', 'SUBDOMAIN', 'URL', 'TARGET'],
        answer.services.map((s) => [s.name, s.subdomain, s.url, s.target]),
      );
    }
    case 'tunnel validate-url':
      return validateUrl(api, command.url, command.save, json);
    case 'tunnel install-command': {
      const body: InstallCommandRequest = { token: await readJoinToken(command.token) };
      const commands = await api.call('POST', `${TUNNEL}/install-command`, { body });
      if (!isInstallCommand(commands)) throw unexpected('the install command');
      if (json) return printJson(commands);
      console.log(
        'Run one of these on the new node. They hold the join token: share them as you would the token.',
      );
      console.log('');
      console.log('Linux (sh; as root where systemd runs, the agent becomes a systemd service):');
      console.log(clean(commands.linux));
      console.log('');
      console.log('Windows (PowerShell):');
      console.log(clean(commands.windows));
      console.log('');
      printFields([
        ['registry_url', commands.registry_url],
        ['ca_fingerprint', commands.ca_fingerprint],
        ['expires_at', commands.expires_at],
      ]);
      return;
    }
  }
}

/** A table, or the sentence that says there is nothing to show. */
function printRows(empty: string, headers: string[], rows: string[][]): void {
  console.log(rows.length === 0 ? empty : table(headers, rows));
}

async function status(api: ApiClient, method: 'GET' | 'POST', action: string): Promise<TunnelStatus> {
  const answer = await api.call(method, `${TUNNEL}/${action}`);
  if (!isTunnelStatus(answer)) throw unexpected('the tunnel status');
  return answer;
}

function printStatus(s: TunnelStatus, json: boolean): void {
  if (json) return printJson(s);
  printFields([
    ['state', s.state],
    ['provider', s.provider],
    ['public_url', orDash(s.public_url)],
    ['agent_endpoint', orDash(s.agent_endpoint)],
    ['started_at', orDash(s.started_at)],
    ['last_error', orDash(s.last_error)],
  ]);
}

/**
 * Prints the checks; a URL that is not valid or does not answer as this instance exits 1 (after
 * printing, as `stacks validate` does), since nothing was stored and the URL would not work.
 */
async function validateUrl(api: ApiClient, url: string, save: boolean, json: boolean): Promise<void> {
  const body: ValidateUrlRequest = { url, save };
  const result = await api.call('POST', `${TUNNEL}/validate-url`, { body });
  if (!isUrlValidation(result)) throw unexpected('the URL validation');
  if (json) printJson(result);
  else
    console.log(
      table(
        ['CHECK', 'OK', 'DETAIL'],
        result.checks.map((c) => [c.name, c.ok ? 'yes' : 'no', c.detail]),
      ),
    );
  const shown = clean(result.url ?? url);
  if (!result.valid) {
    const failed = result.checks.find((c) => !c.ok);
    const why = failed === undefined ? '' : `: ${failed.name}: ${failed.detail}`;
    throw new CliError(`${shown} is not a valid public URL${why}. Nothing was stored.`);
  }
  if (!result.reachable) {
    const failed = result.checks.find((c) => !c.ok);
    const why = failed === undefined ? '' : ` (${failed.name}: ${failed.detail})`;
    throw new CliError(`${shown} does not reach this instance${why}. Nothing was stored.`);
  }
  if (json) return;
  console.log(
    save
      ? `${shown} reaches this instance and is stored as the custom URL; "stackctl tunnel registry-url" shows what agents use.`
      : `${shown} reaches this instance; nothing was stored (--no-save).`,
  );
}
