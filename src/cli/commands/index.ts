import type { ApiClient } from '../api.js';
import type { Command } from '../args.js';
import { runClients } from './clients.js';
import { runKeys } from './keys.js';
import { runJoinTokens } from './join-tokens.js';
import { runWorkers } from './workers.js';
import { runStacks } from './stacks.js';
import { runJobs } from './jobs.js';
import { runDrift } from './drift.js';
import { runTunnel } from './tunnel.js';
import { runMcp } from './mcp.js';
import { runDebug } from './debug.js';

type Resource = Exclude<Command['name'], 'mcp'> extends `${infer R} ${string}` ? R : never;

const isOf = <R extends Resource>(
  command: Command,
  resource: R,
): command is Extract<Command, { name: `${R} ${string}` }> => command.name.startsWith(`${resource} `);

/** Runs one parsed command: each resource's commands live in a file of their own. */
export async function execute(api: ApiClient, command: Command, json: boolean): Promise<void> {
  if (isOf(command, 'clients')) return runClients(api, command, json);
  if (isOf(command, 'keys')) return runKeys(api, command, json);
  if (isOf(command, 'join-tokens')) return runJoinTokens(api, command, json);
  if (isOf(command, 'workers')) return runWorkers(api, command, json);
  if (isOf(command, 'stacks')) return runStacks(api, command, json);
  if (isOf(command, 'jobs')) return runJobs(api, command, json);
  if (isOf(command, 'drift')) return runDrift(api, command, json);
  if (isOf(command, 'tunnel')) return runTunnel(api, command, json);
  if (isOf(command, 'debug')) return runDebug(api, command, json);
  if (command.name === 'mcp') return runMcp(api.connection);
  // Every resource is handled above: a new one fails to compile here until it is.
  const unhandled: never = command;
  throw new Error(`no handler for ${(unhandled as Command).name}`);
}
