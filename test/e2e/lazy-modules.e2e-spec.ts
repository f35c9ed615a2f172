import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testEnv } from '../support/app.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { ServiceProcess } from '../support/service-process.js';

const HOOK = fileURLToPath(new URL('../support/loaded-modules.mjs', import.meta.url));
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BUNDLE = join(ROOT, 'dist/server/bundle/');
const MCP_SDK = /\/node_modules\/@modelcontextprotocol\/sdk\//;
const ZOD = /\/node_modules\/zod\//;
const PGLITE = /\/node_modules\/@electric-sql\/pglite(-socket)?\//;

// What an idle service does not hold (docs/benchmarks.md, "Idle memory"): the MCP SDK and zod are
// loaded on the first /mcp request, PGlite only on the embedded database; the allocator's free memory
// is given back (MEMORY_TRIM_INTERVAL, the native addon `npm run build` compiles). The built service
// (the bundle, as `npm start` runs it) records every module file it loads: a package's own files
// where it is left outside the bundle, else the bundle's chunks that hold its code.
type Outputs = Record<string, { inputs: Record<string, unknown> }>;
const outputs = (JSON.parse(readFileSync(join(BUNDLE, 'metafile.json'), 'utf8')) as { outputs: Outputs })
  .outputs;
/** Whether the loaded file is, or is a chunk of the bundle that holds, a file of the package. */
function holds(path: string, pkg: RegExp): boolean {
  if (pkg.test(path)) return true;
  const chunk = Object.entries(outputs).find(([out]) => join(ROOT, out) === path);
  return chunk !== undefined && Object.keys(chunk[1].inputs).some((input) => pkg.test(`/${input}`));
}

describe('idle memory: modules loaded on first use, free memory given back', () => {
  let db: TestDatabase;
  let service: ServiceProcess;
  let dir: string;
  const loaded = () => readFileSync(join(dir, 'loaded'), 'utf8').split('\n');

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'so-lazy-'));
    db = await createTestDatabase();
    service = await ServiceProcess.start({
      ...testEnv(db),
      NODE_OPTIONS: `--import=${HOOK}`,
      LOADED_MODULES_FILE: join(dir, 'loaded'),
      MEMORY_TRIM_INTERVAL: '1s',
    });
    await service.waitStarted();
  });
  afterAll(async () => {
    await service?.stop('SIGKILL');
    await db?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('runs from the bundle: of node_modules it loads only the packages left outside it', () => {
    // src/server/build/bundle-server.ts, EXTERNAL (their CommonJS parts are not recorded).
    const outside = /\/node_modules\/(pg|reflect-metadata|@electric-sql\/pglite(-socket)?)\//;
    const started = loaded();
    expect(started.filter((path) => path.startsWith(BUNDLE)).length).toBeGreaterThan(0);
    expect(started.filter((path) => path.includes('/node_modules/') && !outside.test(path))).toEqual([]);
  });

  it('imports reflect-metadata first in every file of the bundle, before any decorator can run', () => {
    const files = readdirSync(BUNDLE).filter((file) => file.endsWith('.mjs'));
    expect(files.length).toBeGreaterThan(1);
    for (const file of files) {
      // The entry keeps its `#!` line above it.
      const lines = readFileSync(join(BUNDLE, file), 'utf8').split('\n', 2);
      const first = lines[0].startsWith('#!') ? lines[1] : lines[0];
      expect([file, first]).toEqual([file, `import 'reflect-metadata';`]);
    }
  });

  it('leaves no bundled package naming its files from the bundle instead of its own directory', () => {
    // pino's transport worker, thread-stream's, grpc-js' admin .proto files: src/server/build/bundle-server.ts
    const text = readdirSync(BUNDLE)
      .filter((file) => file.endsWith('.mjs'))
      .map((file) => readFileSync(join(BUNDLE, file), 'utf8'))
      .join('\n');
    expect(text).not.toMatch(/join\(__dirname,\s*"(worker\.js|lib)"/);
    expect(text).not.toMatch(/\$\{__dirname\}\/\.\.\/\.\.\/proto/);
    expect(text).toMatch(/join\(__dirname,\s*"(\.\.\/)+node_modules\/pino\/lib"\)/);
  });

  it('loads PGlite only on the embedded database', () => {
    expect(loaded().some((path) => holds(path, PGLITE))).toBe(db.databaseUrl === undefined);
  });

  it('loads the MCP SDK and zod on the first /mcp request, and answers it', async () => {
    expect(loaded().filter((path) => holds(path, MCP_SDK) || holds(path, ZOD))).toEqual([]);
    const res = await fetch(`${service.url}/mcp`, {
      method: 'POST',
      headers: {
        authorization: await service.adminAuth(),
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(res.status).toBe(200);
    const answer = (await res.json()) as { id: number; result: { tools: { name: string }[] } };
    expect(answer.id).toBe(1);
    expect(answer.result.tools.map((tool) => tool.name)).toContain('get_tunnel_status');
    expect(loaded().some((path) => holds(path, MCP_SDK))).toBe(true);
    expect(loaded().some((path) => holds(path, ZOD))).toBe(true);
  });

  it("gives the allocator's free memory back every MEMORY_TRIM_INTERVAL, counted in /metrics", async () => {
    const trims = async (): Promise<number> => {
      const text = await (await fetch(`${service.url}/metrics`)).text();
      return [...text.matchAll(/^stack_memory_trims_total\{released="(?:true|false)"\} (\d+)$/gm)].reduce(
        (sum, match) => sum + Number(match[1]),
        0,
      );
    };
    const deadline = Date.now() + 15_000;
    while ((await trims()) < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 250));
    expect(await trims()).toBeGreaterThanOrEqual(3);
  });
});
