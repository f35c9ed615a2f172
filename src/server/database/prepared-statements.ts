/**
 * Hot statements, prepared once per connection instead of parsed and planned at every execution.
 *
 * A parameterized query through TypeORM and `pg` is an unnamed statement: PostgreSQL parses and
 * plans it each time. For the statements on the job dispatch path (a deploy's read and its
 * insert, the batched job transitions) that was about 40 % of PostgreSQL's CPU per job
 * (docs/benchmarks.md, "Job dispatch"). A text marked with `prepared()` is sent as a named
 * statement instead: `pg` parses it once per connection and then only binds and executes it.
 *
 * Only a bounded set of texts may be marked (constants, or the few variants one call site builds),
 * since each connection's backend keeps every statement it prepared; and only texts with explicit
 * column lists, never `*`: a named statement whose result columns change under it (another
 * replica's migration adding a column) fails with "cached plan must not change result type".
 */

/** Marked text → its statement name. */
const names = new Map<string, string>();

/** Marks `text` as a statement to prepare on each connection; returns it unchanged. */
export function prepared(text: string): string {
  if (!names.has(text)) names.set(text, `so_${names.size + 1}`);
  return text;
}

type Query = (config: unknown, values?: unknown, callback?: unknown) => unknown;

interface PgClient {
  query: Query;
}

interface PgPool {
  on(event: 'acquire', listener: (client: PgClient) => void): unknown;
}

const PATCHED = Symbol('prepared-statements');

/**
 * Sends marked texts as named statements on every client of `pool`, from its next checkout on.
 * `sharedBackend`: the clients share one backend (the embedded database, where every socket
 * connection reaches the one PGlite session), so a client first deallocates what an earlier client
 * prepared there, which would otherwise collide with its own names.
 */
export function prepareStatements(pool: PgPool, sharedBackend: boolean): void {
  pool.on('acquire', (client) => {
    const seen = client as PgClient & { [PATCHED]?: true };
    if (seen[PATCHED]) return;
    seen[PATCHED] = true;
    const query = client.query.bind(client);
    // Queued ahead of whatever the client runs first.
    if (sharedBackend) (query('DEALLOCATE ALL') as Promise<unknown>).catch(() => undefined);
    client.query = (config, values, callback) => {
      const name = typeof config === 'string' && Array.isArray(values) ? names.get(config) : undefined;
      return name === undefined
        ? query(config, values, callback)
        : query({ name, text: config, values }, callback);
    };
  });
}
