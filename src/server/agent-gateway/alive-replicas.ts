/**
 * The replicas alive now, as a query's `WITH` item named `alive`: those that renewed their row in
 * `agent_replicas` within `ttl` ms (a parameter such as `$2`, or a literal). A session row is live
 * while its replica's row is: at 10,000 agents, renewing every session row (each every 2-3 s) was
 * about 4,000 row updates a second, the most of PostgreSQL's steady load. The one definition of a
 * live replica for every reader: the session directory, the unreachable sweep, the debug bundle.
 */
export const aliveReplicas = (ttl: string): string =>
  `alive AS (SELECT replica FROM agent_replicas
              WHERE seen_at > clock_timestamp() - ${ttl} * interval '1 millisecond')`;
