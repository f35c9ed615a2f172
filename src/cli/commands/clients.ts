import type { ApiClient } from '../api.js';
import type { Command } from '../args.js';
import { clean, printJson, table } from '../output.js';
import { CLIENTS, listAll, unexpected } from './shared.js';
import type { CreateClientRequest } from '../../contracts/api/index.js';
import { isClient, isCreatedClient, type Read } from './views.js';

/** stackctl clients …: one command each, over the HTTP API. */
export async function runClients(
  api: ApiClient,
  command: Extract<Command, { name: `clients ${string}` }>,
  json: boolean,
): Promise<void> {
  switch (command.name) {
    case 'clients create': {
      const body: Read<CreateClientRequest> = {
        name: command.clientName,
        scopes: command.scopes,
        owner: command.owner,
      };
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
      const query: Record<string, string> = {};
      if (command.owner !== undefined) query.owner = command.owner;
      const clients = await listAll(api, CLIENTS, 'clients', query, isClient, 'the client list');
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
  }
}
