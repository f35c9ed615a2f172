import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { FileCredential } from '../definition/definition.types.js';

export interface StoredMonitoringClient {
  role: FileCredential;
  clientId: string;
  /** SecretBox ciphertext of the client's secret, context {@link monitoringClientContext}. */
  secretEnc: string;
}

export const monitoringClientContext = (clientId: string): string => `stack-monitoring-client:${clientId}`;

/** `stack_monitoring_clients`: a stack's monitoring OAuth clients, one per role. */
@Injectable()
export class MonitoringClientsRepository {
  constructor(private readonly dataSource: DataSource) {}

  async forStack(stackId: string): Promise<StoredMonitoringClient[]> {
    const rows = await this.dataSource.query<
      { role: FileCredential; client_id: string; secret_enc: string }[]
    >(`SELECT role, client_id, secret_enc FROM stack_monitoring_clients WHERE stack_id = $1`, [stackId]);
    return rows.map((r) => ({ role: r.role, clientId: r.client_id, secretEnc: r.secret_enc }));
  }

  /** False when the stack already has a client for the role (a deploy on another replica won). */
  async insert(stackId: string, client: StoredMonitoringClient): Promise<boolean> {
    const rows = await this.dataSource.query<unknown[]>(
      `INSERT INTO stack_monitoring_clients (stack_id, role, client_id, secret_enc, created_at)
       VALUES ($1, $2, $3, $4, now()) ON CONFLICT (stack_id, role) DO NOTHING RETURNING role`,
      [stackId, client.role, client.clientId, client.secretEnc],
    );
    return rows.length > 0;
  }
}
