import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { DataSource } from 'typeorm';

/**
 * Named leases in PostgreSQL: work that must run on one replica at a time (the tunnel, later the
 * periodic sweeps) takes one and renews it well before it expires; when its holder dies, the lease
 * runs out and another replica's next attempt takes it. A row and a timestamp rather than an
 * advisory lock: the embedded database serves every pool connection from one backend session,
 * where session locks would be granted to everyone; and a lease survives a dropped connection.
 */
@Injectable()
export class Leases {
  /** This replica, as recorded in `leases.holder`; unique per process. */
  readonly holder = `${hostname()}/${process.pid}/${randomUUID().slice(0, 8)}`;

  /** When this replica last took or renewed each lease it holds. */
  private readonly renewed = new Map<string, number>();

  constructor(private readonly dataSource: DataSource) {}

  /**
   * `acquire` for frequent callers: a lease this replica took or renewed less than a third of its
   * TTL ago is still its own (no other replica can take it before it runs out), so no query runs.
   */
  async holds(name: string, ttlMs: number): Promise<boolean> {
    const at = this.renewed.get(name);
    if (at !== undefined && performance.now() - at < ttlMs / 3) return true;
    const started = performance.now();
    const held = await this.acquire(name, ttlMs);
    if (held) this.renewed.set(name, started);
    else this.renewed.delete(name);
    return held;
  }

  /** Takes `name`, or renews it when this replica holds it; true when this replica holds it now. */
  async acquire(name: string, ttlMs: number): Promise<boolean> {
    const rows = await this.dataSource.query<{ holder: string }[]>(
      `INSERT INTO leases (name, holder, expires_at)
       VALUES ($1, $2, clock_timestamp() + $3 * interval '1 millisecond')
       ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
         WHERE leases.holder = EXCLUDED.holder OR leases.expires_at < clock_timestamp()
       RETURNING holder`,
      [name, this.holder, Math.max(1, Math.round(ttlMs))],
    );
    return rows.length === 1;
  }

  /** Gives `name` up at once (on stop or shutdown) so another replica need not wait out the TTL. */
  async release(name: string): Promise<void> {
    this.renewed.delete(name);
    await this.dataSource.query(`DELETE FROM leases WHERE name = $1 AND holder = $2`, [name, this.holder]);
  }

  /**
   * A marker rather than a lease: any replica may renew `name`, and its expiry only moves forward
   * (to `ttlMs` from now, or stays where another replica put it later). `holder` is the last one.
   */
  async mark(name: string, ttlMs: number): Promise<void> {
    await this.dataSource.query(
      `INSERT INTO leases (name, holder, expires_at)
       VALUES ($1, $2, clock_timestamp() + $3 * interval '1 millisecond')
       ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder,
         expires_at = greatest(leases.expires_at, EXCLUDED.expires_at)`,
      [name, this.holder, Math.max(1, Math.round(ttlMs))],
    );
  }

  /**
   * Milliseconds since `name` expired by the database's clock (negative while it runs), or
   * undefined when it was never taken.
   */
  async expiredFor(name: string): Promise<number | undefined> {
    const rows = await this.dataSource.query<{ ms: number | string }[]>(
      `SELECT extract(epoch FROM clock_timestamp() - expires_at) * 1000 AS ms FROM leases WHERE name = $1`,
      [name],
    );
    return rows.length === 0 ? undefined : Number(rows[0].ms);
  }

  /** Who holds `name` now, if anyone. */
  async holderOf(name: string): Promise<string | undefined> {
    const rows = await this.dataSource.query<{ holder: string }[]>(
      `SELECT holder FROM leases WHERE name = $1 AND expires_at >= clock_timestamp()`,
      [name],
    );
    return rows[0]?.holder;
  }
}
