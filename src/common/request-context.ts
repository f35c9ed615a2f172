import { AsyncLocalStorage } from 'node:async_hooks';
import type { NextFunction, Request, Response } from 'express';
import { requestIdOf } from './problem.js';

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
}

const storage = new AsyncLocalStorage<Store>();

/**
 * Who is asking, for the whole handling of a request: services and repositories read the caller's
 * owner from here instead of taking it as a parameter a controller could forget.
 */
export const RequestContext = {
  middleware: (req: Request, _res: Response, next: NextFunction): void => {
    storage.run({ requestId: requestIdOf(req), ip: req.socket.remoteAddress }, next);
  },

  /** Called by the auth guard once the token is verified. */
  setCaller(caller: Caller): void {
    const store = storage.getStore();
    if (store) store.caller = caller;
  },

  caller(): Caller | undefined {
    return storage.getStore()?.caller;
  },

  /** The caller, or an error: for code that must only run for authenticated requests. */
  requireCaller(): Caller {
    const caller = storage.getStore()?.caller;
    if (!caller) throw new Error('no authenticated caller in this context');
    return caller;
  },

  requestId(): string | undefined {
    return storage.getStore()?.requestId;
  },

  ip(): string | undefined {
    return storage.getStore()?.ip;
  },
};
