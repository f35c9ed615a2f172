import { AsyncLocalStorage } from 'node:async_hooks';
import type { IncomingMessage } from 'node:http';

/** The authenticated client behind a request, as the access token says. */
export interface Caller {
  clientId: string;
  owner: string;
  scopes: string[];
  /** The token's claims, for the validation endpoint. */
  claims: Record<string, unknown>;
}

interface Store {
  requestId: string;
  ip: string | undefined;
  caller?: Caller;
  /** Database work done for the request: statements and their summed execution time. */
  db: DatabaseTime;
}

export interface DatabaseTime {
  queries: number;
  ms: number;
}

/** Where the request object keeps its context, for the request log record written after the fact. */
const STORE = Symbol('request-context');

const storage = new AsyncLocalStorage<Store>();

/**
 * What a request's logs and audit records carry: its id, the source address, the verified caller
 * and the database time. Services do not take the caller from here: controllers hand it to them as
 * an argument (`@Caller()`), so a timer or a tool calls the same method with a caller of its own.
 */
export const RequestContext = {
  /** Runs the rest of the request's handling (`next`) in its context (the request front calls it). */
  run(req: IncomingMessage, requestId: string, next: () => void): void {
    const store: Store = { requestId, ip: req.socket.remoteAddress, db: { queries: 0, ms: 0 } };
    (req as IncomingMessage & { [STORE]?: Store })[STORE] = store;
    storage.run(store, next);
  },

  /** Counts one database statement against the request being handled, if any. */
  recordQuery(ms: number): void {
    const db = storage.getStore()?.db;
    if (!db) return;
    db.queries += 1;
    db.ms += ms;
  },

  /** The database work of a request so far (undefined for requests that never had a context). */
  databaseTimeOf(req: object): DatabaseTime | undefined {
    return (req as { [STORE]?: Store })[STORE]?.db;
  },

  /** Called by the auth guard once the token is verified. */
  setCaller(caller: Caller): void {
    const store = storage.getStore();
    if (store) store.caller = caller;
  },

  caller(): Caller | undefined {
    return storage.getStore()?.caller;
  },

  requestId(): string | undefined {
    return storage.getStore()?.requestId;
  },

  ip(): string | undefined {
    return storage.getStore()?.ip;
  },
};
