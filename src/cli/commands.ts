import type { ApiClient } from './api.js';
import type { Command } from './args.js';
import { CliError } from './errors.js';
import { clean, printJson, table } from './output.js';

/** The shapes of the service's answers that stackctl reads (its own copy: no server code here). */
interface ClientView {
  client_id: string;
  name: string;
  owner: string;
  scopes: string[];
  disabled: boolean;
  created_at: string;
  last_used_at: string | null;
}

interface CreatedClient extends ClientView {
  client_secret: string;
}

interface KeyView {
  kid: string;
  alg: string;
  status: string;
  created_at: string;
  publish_until: string | null;
}

const CLIENTS = 'api/v1/auth/clients';
const KEYS = 'api/v1/auth/keys';

export async function execute(api: ApiClient, command: Command, json: boolean): Promise<void> {
  switch (command.name) {
    case 'clients create': {
      const body = { name: command.clientName, scopes: command.scopes, owner: command.owner };
      const created = await api.call('POST', CLIENTS, { body });
      if (!isCreatedClient(created)) throw unexpected('the new client');
      if (json) return printJson(created);
      console.log(
        `Created client "${clean(created.name)}" (owner ${clean(created.owner)}, scopes ${clean(created.scopes.join(','))}).`,
      );
      console.log(`client_id:     ${clean(created.client_id)}`);
      console.log(`client_secret: ${clean(created.client_secret)}`);
      console.log('The client secret is shown only once: store it now. The service keeps only its hash.');
      return;
    }
    case 'clients list': {
      const clients = await listClients(api, command.owner);
      if (json) return printJson({ clients });
      if (clients.length === 0) {
        console.log(
          command.owner === undefined ? 'No clients.' : `No clients of owner ${clean(command.owner)}.`,
        );
        return;
      }
      console.log(
        table(
          ['CLIENT_ID', 'NAME', 'OWNER', 'SCOPES', 'DISABLED', 'CREATED_AT'],
          clients.map((c) => [
            c.client_id,
            c.name,
            c.owner,
            c.scopes.join(','),
            c.disabled ? 'yes' : 'no',
            c.created_at,
          ]),
        ),
      );
      return;
    }
    case 'clients delete':
      await api.call('DELETE', `${CLIENTS}/${encodeURIComponent(command.clientId)}`);
      if (!json) console.log(`Deleted client ${clean(command.clientId)}.`);
      return;
    case 'keys list': {
      const answer = await api.call('GET', KEYS);
      const keys = isObject(answer) ? answer.keys : undefined;
      if (!Array.isArray(keys) || !keys.every(isKey)) throw unexpected('the key list');
      if (json) return printJson(answer);
      console.log(
        table(
          ['KID', 'ALG', 'STATUS', 'CREATED_AT', 'PUBLISH_UNTIL'],
          keys.map((k) => [k.kid, k.alg, k.status, k.created_at, k.publish_until ?? '-']),
        ),
      );
      return;
    }
    case 'keys rotate': {
      const answer = await api.call('POST', `${KEYS}/rotate`);
      if (
        !isObject(answer) ||
        typeof answer.kid !== 'string' ||
        !Array.isArray(answer.retired) ||
        !answer.retired.every((k) => typeof k === 'string')
      )
        throw unexpected('the rotation');
      if (json) return printJson(answer);
      console.log(`Signing key rotated. New key: ${clean(answer.kid)}`);
      console.log(
        answer.retired.length === 0
          ? 'No key was retired.'
          : `Retired (still published until the tokens they signed expire): ${clean(answer.retired.join(', '))}`,
      );
      return;
    }
  }
}

/** Every page of the client list, following `next_cursor` until it is null. */
async function listClients(api: ApiClient, owner: string | undefined): Promise<ClientView[]> {
  const clients: ClientView[] = [];
  const seen = new Set<string>();
  let cursor: string | null = null;
  do {
    const query: Record<string, string> = {};
    if (owner !== undefined) query.owner = owner;
    if (cursor !== null) query.cursor = cursor;
    const page = await api.call('GET', CLIENTS, { query });
    const items = isObject(page) ? page.clients : undefined;
    const next = isObject(page) ? page.next_cursor : undefined;
    if (!Array.isArray(items) || !items.every(isClient) || (next !== null && typeof next !== 'string'))
      throw unexpected('the client list');
    clients.push(...items);
    if (next !== null && seen.has(next)) throw new CliError('the service sent the same page cursor twice.');
    if (next !== null) seen.add(next);
    cursor = next;
  } while (cursor !== null);
  return clients;
}

const unexpected = (what: string) =>
  new CliError(`the service answered ${what} in a shape stackctl does not know.`);

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

function isClient(value: unknown): value is ClientView & Record<string, unknown> {
  return (
    isObject(value) &&
    typeof value.client_id === 'string' &&
    typeof value.name === 'string' &&
    typeof value.owner === 'string' &&
    Array.isArray(value.scopes) &&
    value.scopes.every((s) => typeof s === 'string') &&
    typeof value.disabled === 'boolean' &&
    typeof value.created_at === 'string'
  );
}

const isCreatedClient = (value: unknown): value is CreatedClient =>
  isClient(value) && typeof value.client_secret === 'string';

function isKey(value: unknown): value is KeyView {
  return (
    isObject(value) &&
    typeof value.kid === 'string' &&
    typeof value.alg === 'string' &&
    typeof value.status === 'string' &&
    typeof value.created_at === 'string' &&
    (value.publish_until === null || typeof value.publish_until === 'string')
  );
}
