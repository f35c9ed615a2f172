import { PGlite } from '@electric-sql/pglite';
import { NodeFS } from '@electric-sql/pglite/nodefs';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import { closeSync, existsSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { makePrivateDir, PRIVATE_FILE_MODE } from '../../contracts/private-files.js';

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
    makePrivateDir(dataDir);
    const lockFile = join(dataDir, 'pgdata.lock');
    takeLock(lockFile);
    try {
      const pgdata = join(dataDir, 'pgdata');
      makePrivateDir(pgdata);
      const db = await PGlite.create({ fs: new OwnerOnlyNodeFS(pgdata) });
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
  const fd = openSync(lockFile, 'wx', PRIVATE_FILE_MODE);
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

type EmscriptenOptions = Parameters<NodeFS['init']>[1];

/** The parts of Emscripten's NODEFS (the backend NodeFS mounts) that set modes on disk. */
interface NodeFsBackend {
  node_ops: {
    mknod(parent: unknown, name: string, mode: number, dev: number): unknown;
    setattr(node: unknown, attr: { mode?: number }): void;
  };
  stream_ops: { setattr(stream: unknown, attr: { mode?: number }): void };
}

/**
 * NodeFS whose files and directories on disk are owner-only. Emscripten's file system does not
 * apply the umask: it chmods each file it creates to exactly the mode asked for, and what initdb
 * writes and PostgreSQL opens with fopen() asks for 0666 (PostgreSQL proper relies on the
 * postmaster's umask of 077 there). Every mode PGlite sets on disk loses its group and other bits
 * here instead, as under that umask.
 */
class OwnerOnlyNodeFS extends NodeFS {
  override async init(pg: PGlite, opts: EmscriptenOptions): Promise<{ emscriptenOpts: EmscriptenOptions }> {
    const { emscriptenOpts } = await super.init(pg, opts);
    // After NodeFS's own preRun (which mounts the directory) and before PostgreSQL touches a file.
    const restrict = (mod: { FS: unknown }) => {
      const backend = (mod.FS as { filesystems: { NODEFS: NodeFsBackend } }).filesystems.NODEFS;
      const ownerOnly = <A extends { mode?: number }>(attr: A): A =>
        attr.mode === undefined ? attr : { ...attr, mode: attr.mode & ~0o077 };
      const { node_ops: nodeOps, stream_ops: streamOps } = backend;
      const mknod = nodeOps.mknod.bind(nodeOps);
      const setattr = nodeOps.setattr.bind(nodeOps);
      const streamSetattr = streamOps.setattr.bind(streamOps);
      nodeOps.mknod = (parent, name, mode, dev) => mknod(parent, name, mode & ~0o077, dev);
      nodeOps.setattr = (node, attr) => setattr(node, ownerOnly(attr));
      streamOps.setattr = (stream, attr) => streamSetattr(stream, ownerOnly(attr));
    };
    return { emscriptenOpts: { ...emscriptenOpts, preRun: [...(emscriptenOpts.preRun ?? []), restrict] } };
  }
}
