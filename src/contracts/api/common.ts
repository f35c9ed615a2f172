// Scalars every resource uses.

/**
 * A point in time on the wire: ISO 8601 in UTC with milliseconds, as `Date.prototype.toISOString`
 * writes it (`2026-11-22T01:34:34.789Z`). The service's view functions convert every Date; since a
 * Date is not a string, a view that forgets to fails to compile.
 * @format date-time
 */
export type Timestamp = string;

/** Worker and placement labels: key → value, both strings. */
export type Labels = Record<string, string>;
