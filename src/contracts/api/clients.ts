// `.../auth/clients`: OAuth clients of an owner.
import type { Timestamp } from './common.js';
import type { ListPage, PageQuery } from './page.js';

/** Every scope a client can hold (CONTRACT.md). `admin` implies all of them. */
export type Scope =
  | 'orchestrator:read'
  | 'orchestrator:write'
  | 'workers:admin'
  | 'tunnel:read'
  | 'tunnel:write'
  | 'metrics:read'
  | 'metrics:write'
  | 'admin';

export interface ClientView {
  client_id: string;
  name: string;
  owner: string;
  scopes: Scope[];
  disabled: boolean;
  created_at: Timestamp;
  last_used_at: Timestamp | null;
}

export interface CreatedClient extends ClientView {
  /** Shown once; only its scrypt hash is stored. */
  client_secret: string;
}

export interface CreateClientRequest {
  name: string;
  /** Operator only: another owner's client; the caller's owner by default. */
  owner?: string;
  scopes: Scope[];
}

export interface UpdateClientRequest {
  disabled: boolean;
}

export interface ListClientsQuery extends PageQuery {
  /** Operator only: another owner's clients. */
  owner?: string;
}

export type ClientList = ListPage<'clients', ClientView>;
