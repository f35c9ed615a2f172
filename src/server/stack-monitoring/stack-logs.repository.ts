import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { StackLogStream } from '../../contracts/api/stack-logs.js';

/** A line on its way into `stack_logs`. */
export interface NewLogLine {
  stackId: string;
  workerId: string;
  service: string;
  time: Date;
  stream: StackLogStream;
  line: string;
}

export interface LogLineRow {
  id: string;
  time: Date;
  service: string;
  worker_id: string;
  stream: StackLogStream;
  line: string;
}

/** Which lines of one stack a read wants. */
export interface LogFilter {
  stackId: string;
  service?: string;
  since?: Date;
  until?: Date;
}

const COLUMNS = 'id, time, service, worker_id, stream, line';

/** The `AND ...` of a filter, its parameters numbered from `first`. */
function where(filter: LogFilter, first: number): { sql: string; params: unknown[] } {
  const parts: string[] = [];
  const params: unknown[] = [];
  const add = (sql: string, value: unknown) => {
    params.push(value);
    parts.push(sql.replace('?', `$${first + params.length - 1}`));
  };
  if (filter.service !== undefined) add('service = ?', filter.service);
  if (filter.since !== undefined) add('time >= ?', filter.since);
  if (filter.until !== undefined) add('time < ?', filter.until);
  return { sql: parts.map((p) => ` AND ${p}`).join(''), params };
}

/**
 * `stack_logs`: the stacks' service output. Every read names its stack; the service checks the
 * caller owns it first (the stack's owner is the lines' owner).
 */
@Injectable()
export class StackLogsRepository {
  constructor(private readonly dataSource: DataSource) {}

  /**
   * Stores lines of stacks placed on the worker that sent them (others are dropped: a worker
   * speaks only for the stacks it runs); answers the stacks that got lines.
   */
  async insert(lines: NewLogLine[]): Promise<string[]> {
    if (lines.length === 0) return [];
    const rows = await this.dataSource.query<{ stack_id: string }[]>(
      `WITH added AS (
         INSERT INTO stack_logs (stack_id, worker_id, service, time, stream, line)
         SELECT u.stack_id, u.worker_id, u.service, u.time, u.stream, u.line
           FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::timestamptz[], $5::text[], $6::text[])
                  WITH ORDINALITY AS u (stack_id, worker_id, service, time, stream, line, n)
           JOIN stacks s ON s.id = u.stack_id AND s.worker_id = u.worker_id
          ORDER BY u.n
         RETURNING stack_id)
       SELECT DISTINCT stack_id FROM added`,
      [
        lines.map((l) => l.stackId),
        lines.map((l) => l.workerId),
        lines.map((l) => l.service),
        lines.map((l) => l.time),
        lines.map((l) => l.stream),
        lines.map((l) => l.line),
      ],
    );
    return rows.map((r) => r.stack_id);
  }

  /** The newest `limit` lines matching, newest first. */
  newest(filter: LogFilter, limit: number, upTo?: string): Promise<LogLineRow[]> {
    const { sql, params } = where(filter, upTo === undefined ? 2 : 3);
    return this.dataSource.query<LogLineRow[]>(
      `SELECT ${COLUMNS} FROM stack_logs WHERE stack_id = $1${upTo === undefined ? '' : ' AND id <= $2'}${sql}
        ORDER BY time DESC, id DESC LIMIT ${Math.floor(limit)}`,
      [filter.stackId, ...(upTo === undefined ? [] : [upTo]), ...params],
    );
  }

  /** Lines that arrived after `afterId`, matching, in arrival order. */
  after(filter: LogFilter, afterId: string, limit: number): Promise<LogLineRow[]> {
    const { sql, params } = where(filter, 3);
    return this.dataSource.query<LogLineRow[]>(
      `SELECT ${COLUMNS} FROM stack_logs WHERE stack_id = $1 AND id > $2${sql}
        ORDER BY id LIMIT ${Math.floor(limit)}`,
      [filter.stackId, afterId, ...params],
    );
  }

  /** The id of the stack's latest line ('0' without any): where a follower starts. */
  async lastId(stackId: string): Promise<string> {
    const rows = await this.dataSource.query<{ id: string | null }[]>(
      `SELECT max(id) AS id FROM stack_logs WHERE stack_id = $1`,
      [stackId],
    );
    return rows[0]?.id ?? '0';
  }

  /**
   * Deletes up to `batch` lines older than their stack's retention: `monitoring.log_store.retention`
   * of the revision the stack runs (else its current one), `defaultDays` when it sets none.
   * Answers how many went.
   */
  async deleteExpired(now: Date, defaultDays: number, batch: number): Promise<number> {
    const [, count] = await this.dataSource.query<[unknown[], number]>(
      `WITH kept AS (
         SELECT s.id, COALESCE((r.definition #>> '{monitoring,log_store,retention_days}')::int, $2) AS days
           FROM stacks s
           JOIN stack_revisions r ON r.stack_id = s.id AND r.revision = COALESCE(s.deployed_revision, s.revision))
       DELETE FROM stack_logs WHERE id IN (
         SELECT l.id FROM kept k
           JOIN LATERAL (SELECT id FROM stack_logs
                          WHERE stack_id = k.id AND time < $1::timestamptz - k.days * interval '1 day'
                          LIMIT $3) l ON true
          LIMIT $3)`,
      [now, defaultDays, batch],
    );
    return count;
  }
}
