import type { NestExpressApplication } from '@nestjs/platform-express';
import { DataSource } from 'typeorm';
import { MAINTENANCE_LEASE } from '../../src/server/metric-store/store/maintenance.js';

/**
 * Gives the metric store's maintenance lease to a made-up replica that never compacts, so the app's
 * own ticks skip compaction and retention: batches stay batches until the test compacts them.
 * Returns a function that gives the lease back.
 */
export async function holdMaintenanceLease(app: NestExpressApplication): Promise<() => Promise<void>> {
  const db = app.get(DataSource);
  const holder = 'test-holds-maintenance';
  await db.query(
    `INSERT INTO leases (name, holder, expires_at) VALUES ($1, $2, now() + interval '1 day')
     ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at`,
    [MAINTENANCE_LEASE, holder],
  );
  return async () => {
    await db.query(`DELETE FROM leases WHERE name = $1 AND holder = $2`, [MAINTENANCE_LEASE, holder]);
  };
}
