import { Injectable, Logger } from '@nestjs/common';
import { ClientsService } from '../../auth/clients.service.js';
import type { Scope } from '../../auth/scopes.js';
import { SecretBox } from '../../common/secret-box.js';
import type { FileCredential } from '../definition/definition.types.js';
import { MonitoringClientsRepository, monitoringClientContext } from './monitoring-clients.repository.js';

const SCOPE: Record<FileCredential, Scope> = {
  metrics_writer: 'metrics:write',
  metrics_reader: 'metrics:read',
};

export interface MonitoringClient {
  clientId: string;
  secret: string;
  /** Made by this call: the services holding its secret must be replaced to get it. */
  created: boolean;
}

/**
 * A stack's monitoring clients: one OAuth client per role its generated files need, made on the
 * first deploy that needs it, in the stack's owner, with only that role's scope (`metrics:write`
 * for the metrics store's remote write, `metrics:read` for the dashboard's orchestrator data
 * source). The secret is scrypt-hashed like every client's, and kept besides sealed by SecretBox
 * so later deploys can hand it to the agent again; it is never logged. Destroying the stack
 * deletes them; an operator may delete one to rotate it (the next deploy makes another).
 */
@Injectable()
export class MonitoringClientsService {
  private readonly logger = new Logger('stacks');

  constructor(
    private readonly repository: MonitoringClientsRepository,
    private readonly clients: ClientsService,
    private readonly box: SecretBox,
  ) {}

  async ensure(
    stack: { id: string; owner: string; name: string },
    roles: readonly FileCredential[],
  ): Promise<Map<FileCredential, MonitoringClient>> {
    const found = new Map<FileCredential, MonitoringClient>();
    for (const row of await this.repository.forStack(stack.id)) {
      if (!roles.includes(row.role)) continue;
      found.set(row.role, {
        clientId: row.clientId,
        secret: this.box.decrypt(row.secretEnc, monitoringClientContext(row.clientId)),
        created: false,
      });
    }
    for (const role of roles) {
      if (found.has(role)) continue;
      const made = await this.clients.createInternal(stack.owner, `stack ${stack.name} ${role}`, [
        SCOPE[role],
      ]);
      const secretEnc = this.box.encrypt(made.secret, monitoringClientContext(made.clientId));
      if (await this.repository.insert(stack.id, { role, clientId: made.clientId, secretEnc })) {
        found.set(role, { ...made, created: true });
        this.logger.log(
          { stack_id: stack.id, client_id: made.clientId, role },
          'stack monitoring client created',
        );
        continue;
      }
      // Another deploy made one at the same time: use that one, drop ours.
      await this.clients.deleteInternal(stack.owner, made.clientId);
      const row = (await this.repository.forStack(stack.id)).find((r) => r.role === role);
      if (!row) throw new Error(`the stack's ${role} client vanished while it was made`);
      found.set(role, {
        clientId: row.clientId,
        secret: this.box.decrypt(row.secretEnc, monitoringClientContext(row.clientId)),
        created: false,
      });
    }
    return found;
  }

  /** Deletes the stack's clients (before the stack row, whose deletion takes the rows along). */
  async removeAll(stack: { id: string; owner: string }): Promise<void> {
    for (const row of await this.repository.forStack(stack.id))
      await this.clients.deleteInternal(stack.owner, row.clientId);
  }
}
