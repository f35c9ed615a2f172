import { PGlite } from '@electric-sql/pglite';
import { NodeFS } from '@electric-sql/pglite/nodefs';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import {
  chmodSync,
  closeSync,
  existsSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeSync,
} from 'node:fs';
import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { makePrivateDir, PRIVATE_FILE_MODE } from '../../contracts/private-files.js';

/**
 * PostgreSQL settings for the embedded database, on top of PGlite's own start parameters. PGlite's
 * initdb writes `shared_buffers = 128MB` (plus the WAL buffers sized from it) into the WASM heap of
 * the service's own process; one connection, a control plane's small tables and the OS page cache
 * behind NodeFS do not need that. See docs/benchmarks.md ("Idle memory") for what each one costs.
 * `default_statistics_target` 10 (PostgreSQL's default is 100): the service's own ANALYZE passes
 * (embedded-vacuum.ts) run on the one backend every statement waits for, and ANALYZE of the jobs
 * table under a deploy burst took 80-220 ms at 100 against 80-120 ms at 10; ten most common values
 * and histogram buckets per column are plenty for a control plane's equality lookups.
 */
export const EMBEDDED_SETTINGS: Readonly<Record<string, string>> = {
  shared_buffers: '16MB',
  temp_buffers: '2MB',
  max_connections: '10',
  default_statistics_target: '10',
};

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
    /** Whether this start created the database (an empty data directory): nothing came before. */
    readonly created: boolean,
  ) {}

  /** Opens (or creates) the database and starts serving it. `maxConnections` must cover the pool. */
  static async start(dataDir: string, maxConnections: number): Promise<EmbeddedPostgres> {
    makePrivateDir(dataDir);
    const lockFile = join(dataDir, 'pgdata.lock');
    takeLock(lockFile);
    try {
      const pgdata = join(dataDir, 'pgdata');
      makePrivateDir(pgdata);
      const created = !existsSync(join(pgdata, 'PG_VERSION'));
      if (created) await initdbInChild(pgdata);
      const db = await PGlite.create({
        fs: new OwnerOnlyNodeFS(pgdata),
        startParams: [
          ...PGlite.defaultStartParams,
          ...Object.entries(EMBEDDED_SETTINGS).flatMap(([name, value]) => ['-c', `${name}=${value}`]),
        ],
      });
      const server = new PGLiteSocketServer({ db, host: '127.0.0.1', port: 0, maxConnections });
      await server.start();
      return new EmbeddedPostgres(
        db,
        server,
        lockFile,
        `postgres://postgres@${server.getServerConn()}/postgres`,
        created,
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

/**
 * Creates the cluster in a child process that exits afterwards. PGlite runs initdb in a second,
 * temporary PGlite instance whose WASM memory (about 450 MB) stays referenced after it is closed,
 * and even from a worker thread about 160 MB of it stayed in this process's allocator; a child
 * process gives all of it back. The child is plain JavaScript (this module also runs from
 * TypeScript sources in the tests), so it uses PGlite's own NodeFS and the files it wrote are made
 * owner-only afterwards; `pgdata` itself is owner-only throughout.
 */
async function initdbInChild(pgdata: string): Promise<void> {
  const require = createRequire(import.meta.url);
  const script = `const [pgdata, pglite, nodefs] = process.argv.slice(1);
    const { PGlite } = require(pglite);
    const { NodeFS } = require(nodefs);
    PGlite.create({ fs: new NodeFS(pgdata) }).then((db) => db.close());`;
  await new Promise<void>((resolve, reject) => {
    execFile(
      process.execPath,
      [
        '-e',
        script,
        pgdata,
        require.resolve('@electric-sql/pglite'),
        require.resolve('@electric-sql/pglite/nodefs'),
      ],
      (err, _stdout, stderr) =>
        err
          ? reject(new Error(`initdb of the embedded database failed: ${stderr || err.message}`))
          : resolve(),
    );
  });
  restrictTree(pgdata);
}

/** Drops group and other bits from every file and directory under `dir`. */
function restrictTree(dir: string): void {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) restrictTree(path);
    const mode = statSync(path).mode & 0o7777;
    if (mode & 0o077) chmodSync(path, mode & ~0o077);
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
