import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';

export interface LinkRow {
  fromId: string;
  toId: string;
  reachable: boolean;
  rttMs: number | null;
  checkedAt: Date;
}

@Injectable()
export class ConnectivityRepository {
  constructor(private readonly dataSource: DataSource) {}

  /**
   * The latest result per (from, to), in one statement; links of deleted workers are skipped, and a
   * late answer to an older round does not replace a newer one.
   */
  async upsert(rows: LinkRow[]): Promise<void> {
    if (rows.length === 0) return;
    await this.dataSource.query(
      `INSERT INTO worker_links (from_id, to_id, reachable, rtt_ms, checked_at)
       SELECT u.from_id, u.to_id, u.reachable, u.rtt_ms, u.checked_at
         FROM (SELECT unnest($1::uuid[]) AS from_id, unnest($2::uuid[]) AS to_id, unnest($3::boolean[]) AS reachable,
                      unnest($4::float8[]) AS rtt_ms, unnest($5::timestamptz[]) AS checked_at) u
         JOIN workers f ON f.id = u.from_id
         JOIN workers t ON t.id = u.to_id
       ON CONFLICT (from_id, to_id) DO UPDATE
         SET reachable = EXCLUDED.reachable, rtt_ms = EXCLUDED.rtt_ms, checked_at = EXCLUDED.checked_at
         WHERE worker_links.checked_at <= EXCLUDED.checked_at`,
      [
        rows.map((r) => r.fromId),
        rows.map((r) => r.toId),
        rows.map((r) => r.reachable),
        rows.map((r) => r.rttMs),
        rows.map((r) => r.checkedAt.toISOString()),
      ],
    );
  }

  /** The latest results of probes from these workers, whoever owns them. */
  async linksFrom(workerIds: string[]): Promise<LinkRow[]> {
    if (workerIds.length === 0) return [];
    const rows = await this.dataSource.query<
      { from_id: string; to_id: string; reachable: boolean; rtt_ms: number | null; checked_at: Date }[]
    >(
      `SELECT from_id, to_id, reachable, rtt_ms, checked_at FROM worker_links
        WHERE from_id = ANY($1::uuid[]) ORDER BY from_id, to_id`,
      [workerIds],
    );
    return rows.map(toLinkRow);
  }

  /** The owner's workers (approved ones) and the links between them. */
  async matrix(owner: string): Promise<{ workers: string[]; links: LinkRow[] }> {
    const workers = await this.dataSource.query<{ id: string }[]>(
      `SELECT id FROM workers WHERE owner = $1 AND status <> 'pending' ORDER BY created_at, id`,
      [owner],
    );
    const links = await this.dataSource.query<
      {
        from_id: string;
        to_id: string;
        reachable: boolean;
        rtt_ms: number | null;
        checked_at: Date;
      }[]
    >(
      `SELECT l.from_id, l.to_id, l.reachable, l.rtt_ms, l.checked_at
         FROM worker_links l JOIN workers w ON w.id = l.from_id
        WHERE w.owner = $1 ORDER BY l.from_id, l.to_id`,
      [owner],
    );
    return { workers: workers.map((w) => w.id), links: links.map(toLinkRow) };
  }
}

const toLinkRow = (l: {
  from_id: string;
  to_id: string;
  reachable: boolean;
  rtt_ms: number | null;
  checked_at: Date;
}): LinkRow => ({
  fromId: l.from_id,
  toId: l.to_id,
  reachable: l.reachable,
  rttMs: l.rtt_ms,
  checkedAt: l.checked_at,
});
