import type { Caller } from '../common/request-context.js';
import { operatorOnly } from './auth.errors.js';
import { OPERATOR_OWNER } from './scopes.js';

export const isOperator = (caller: Caller): boolean => caller.owner === OPERATOR_OWNER;

/**
 * For instance-wide operations (log level, key rotation): the caller must belong to the operator
 * owner. The route's scope (`admin`) is checked by the guard before this.
 */
export function assertOperator(caller: Caller): Caller {
  if (!isOperator(caller)) throw operatorOnly();
  return caller;
}

/**
 * The owner a request acts on: the caller's own, or, for the operator only, another one it names.
 */
export function ownerInScope(caller: Caller, requested: string | undefined): string {
  if (requested === undefined || requested === caller.owner) return caller.owner;
  if (!isOperator(caller)) throw operatorOnly();
  return requested;
}
