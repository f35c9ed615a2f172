import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The embedded database: PGlite persisted under `<dataDir>/pgdata`, served over the PostgreSQL wire
 * protocol on a loopback port so the rest of the service talks to it through `pg` exactly as it
 * talks to a real PostgreSQL server.
 */
export class EmbeddedPostgres {
  private constructor(
    private readonly db: PGlite,
    private readonly server: PGLiteSocketServer,
    private readonly lockFile: string,
    /** A `postgres://` URL for `pg`. */
    readonly url: string,
  ) {}

  /** Opens (or creates) the database and starts serving it. `maxConnections` must cover the pool. */
  static async start(dataDir: string, maxConnections: number): Promise<EmbeddedPostgres> {
    mkdirSync(dataDir, { recursive: true });
    const lockFile = join(dataDir, 'pgdata.lock');
    takeLock(lockFile);
    try {
      const db = await PGlite.create({ dataDir: join(dataDir, 'pgdata') });
      const server = new PGLiteSocketServer({ db, host: '127.0.0.1', port: 0, maxConnections });
      await server.start();
      return new EmbeddedPostgres(
        db,
        server,
        lockFile,
        `postgres://postgres@${server.getServerConn()}/postgres`,
      );
    } catch (err) {
      rmSync(lockFile, { force: true });
      throw err;
    }
  }

  async stop(): Promise<void> {
    await this.server.stop();
    await this.db.close();
    rmSync(this.lockFile, { force: true });
  }
}

/** One process per data directory: a second one would corrupt the embedded database. */
function takeLock(lockFile: string): void {
  if (existsSync(lockFile)) {
    const pid = Number(readFileSync(lockFile, 'utf8').trim());
    if (pid && pid !== process.pid && isAlive(pid)) {
      throw new Error(
        `the embedded database in ${lockFile.replace(/pgdata\.lock$/, '')} is in use by process ${pid}`,
      );
    }
    rmSync(lockFile, { force: true });
  }
  const fd = openSync(lockFile, 'wx');
  writeSync(fd, String(process.pid));
  closeSync(fd);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
