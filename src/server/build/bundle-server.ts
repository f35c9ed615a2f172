// Build time only (`npm run build` runs the compiled file after tsc; the service never imports it).
// Bundles the compiled service (dist/server/main.js and what it imports, node_modules included) into
// dist/server/bundle/: main.mjs, the entry, and a chunk for each module loaded on first use
// (`import()`: the embedded database's glue, the MCP endpoint with its SDK). A start then opens
// about 70 files instead of about 3,600 and is ready in about half the time (docs/operations.md,
// "What runs: the bundle"; docs/benchmarks.md, "Start-up to ready"). The bundle needs node_modules
// beside it for the packages left outside (below).
//
// The input is tsc's output, not the sources: esbuild does not emit decorator metadata, which Nest's
// dependency injection reads, and tsc has already written it as plain calls.
import { build, type Plugin } from 'esbuild';
import { createRequire } from 'node:module';
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { packageRoot } from '../tunnel/install/package-root.js';
import { dropNameWrappers } from './drop-name-wrappers.js';
import { ESM_BANNER } from './esm-banner.js';

const root = packageRoot(import.meta.url);
const dist = join(root, 'dist');
const outdir = join(dist, 'server', 'bundle');

// Left outside, loaded from node_modules at run time:
// - PGlite and its socket server: they read their WebAssembly and data files beside their modules.
// - pg: TypeORM requires it by a name it computes, which a bundler cannot follow; bundled, the
//   project's own import of it would be a second copy of the driver.
// - reflect-metadata: Nest's decorators need it installed before they run. Bundled, it would be a
//   CommonJS module run where it is first required, which with code split into chunks can come
//   after a chunk whose decorators run on import; outside, the banner imports it first in every
//   chunk, so it runs before any of them.
// - Native add-ons (below), and the optional packages Nest and ssh2 try inside try/catch and do without
//   (Nest's transports and its Fastify adapter's: the service runs on Express).
const EXTERNAL = [
  '@electric-sql/pglite',
  '@electric-sql/pglite-socket',
  '@electric-sql/pglite/*',
  'pg',
  'cpu-features',
  'pg-native',
  '@nestjs/microservices',
  '@nestjs/microservices/*',
  '@nestjs/websockets',
  '@nestjs/websockets/*',
  '@fastify/*',
  'reflect-metadata',
];

/**
 * The project's own modules read files beside them (`new URL('./agent.proto', import.meta.url)`,
 * the catalog, the install scripts, the console, the native add-on). In the bundle every module's
 * `import.meta.url` would be the chunk's, so each is replaced by the URL its module had in dist/,
 * relative to the bundle's directory: the dist/ tree can still be moved as a whole.
 */
const ownModuleUrls: Plugin = {
  name: 'own-module-urls',
  setup(b) {
    b.onLoad({ filter: /\.js$/ }, async (args) => {
      if (!args.path.startsWith(dist + sep) || args.path.startsWith(outdir + sep)) return undefined;
      const source = await readFile(args.path, 'utf8');
      if (!source.includes('import.meta.url')) return undefined;
      const fromBundle = relative(outdir, args.path).split(sep).join('/');
      const url = `new URL(${JSON.stringify(fromBundle)}, import.meta.url).href`;
      return { contents: source.replaceAll('import.meta.url', url), loader: 'js' };
    });
  },
};

/**
 * The same for packages that name files beside their modules through `__dirname`: grpc-health-check
 * loads its .proto from its own directory; pino and thread-stream start a transport's worker thread
 * from their files, and grpc-js' channelz and ORCA load their .proto files (unused today: a pino
 * `transport` or a grpc admin service would find them where they are).
 */
const DIRNAME_PACKAGES = ['grpc-health-check', 'pino', 'thread-stream', '@grpc/grpc-js'];
const packageDirnames: Plugin = {
  name: 'package-dirnames',
  setup(b) {
    const filter = new RegExp(`/node_modules/(${DIRNAME_PACKAGES.join('|')})/.*\\.js$`);
    b.onLoad({ filter }, async (args) => {
      const source = await readFile(args.path, 'utf8');
      const fromBundle = relative(outdir, dirname(args.path)).split(sep).join('/');
      const dir = `require('node:path').join(__dirname, ${JSON.stringify(fromBundle)})`;
      return { contents: source.replace(/\b__dirname\b/g, dir), loader: 'js' };
    });
  },
};

/**
 * A package's native add-on (ssh2's sshcrypto.node) stays where npm built it: the bundle requires it
 * by its path relative to the bundle's directory, which it reaches through node_modules as before.
 * A package falls back to JavaScript when its add-on was not built, as it does unbundled.
 */
const nativeAddons: Plugin = {
  name: 'native-addons',
  setup(b) {
    b.onResolve({ filter: /\.node$/ }, (args) => {
      if (!args.path.startsWith('.')) return undefined;
      const fromBundle = relative(outdir, resolve(args.resolveDir, args.path)).split(sep).join('/');
      return { path: fromBundle.startsWith('.') ? fromBundle : `./${fromBundle}`, external: true };
    });
  },
};

/**
 * `import('class-validator')` and `import('class-transformer')` (Nest's ValidationPipe loads them so):
 * esbuild makes a chunk for a CommonJS package imported dynamically that exports only `default`,
 * where Node gives the package's named exports too, and the pipe calls `plainToInstance` on the
 * namespace. So the dynamic import gets a module that re-exports every name the package has.
 */
const CJS_DYNAMIC = ['class-validator', 'class-transformer'];
const NAMED_CJS = 'named-cjs';
const requireFromRoot = createRequire(join(root, 'package.json'));
const namedCjsDynamicImports: Plugin = {
  name: 'named-cjs-dynamic-imports',
  setup(b) {
    const filter = new RegExp(`^(${CJS_DYNAMIC.join('|')})$`);
    b.onResolve({ filter }, (args) =>
      args.kind === 'dynamic-import' ? { path: args.path, namespace: NAMED_CJS } : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: NAMED_CJS }, (args) => {
      const names = Object.keys(requireFromRoot(args.path) as object).filter(
        (name) => name !== 'default' && /^[A-Za-z_$][\w$]*$/.test(name),
      );
      const from = JSON.stringify(args.path);
      return {
        resolveDir: root,
        loader: 'js',
        contents: `import * as pkg from ${from};\nexport const { ${names.join(', ')} } = pkg;\n`,
      };
    });
  },
};

/** A chunk esbuild made for another CommonJS package imported dynamically would lose its names. */
async function checkNoDefaultOnlyChunks(): Promise<void> {
  for (const file of await readdir(outdir)) {
    if (!file.endsWith('.mjs')) continue;
    const text = await readFile(join(outdir, file), 'utf8');
    if (/export default require_\w+\(\);\s*(\/\/# sourceMappingURL=\S+\s*)?$/.test(text)) {
      throw new Error(
        `${file}: a CommonJS package imported with import() keeps only its default export; add it to CJS_DYNAMIC in ${fileURLToPath(import.meta.url)}`,
      );
    }
  }
}

/**
 * keepNames' `__name` wrappers cost a dictionary-mode function object and a property redefinition
 * per closure created (drop-name-wrappers.ts); each output file loses those that change nothing.
 * The rewrite keeps every character's position, so the linked source maps stay as esbuild wrote them.
 */
async function dropRedundantNameWrappers(): Promise<void> {
  for (const file of await readdir(outdir)) {
    if (!file.endsWith('.mjs')) continue;
    const path = join(outdir, file);
    const { code, dropped } = dropNameWrappers(await readFile(path, 'utf8'));
    if (dropped > 0) await writeFile(path, code);
  }
}

/** Writes the bundle into dist/server/bundle/ (emptied first); returns its entry's path. */
export async function bundleServer(): Promise<string> {
  await rm(outdir, { recursive: true, force: true });
  const result = await build({
    entryPoints: { main: join(dist, 'server', 'main.js') },
    outdir,
    outExtension: { '.js': '.mjs' },
    bundle: true,
    splitting: true,
    chunkNames: '[name]-[hash]',
    platform: 'node',
    format: 'esm',
    target: 'node20',
    // reflect-metadata before anything else in every chunk: tsc's `__metadata` helper does nothing
    // where `Reflect.metadata` is missing, so a chunk whose decorators ran first would lose the
    // design types Nest injects by, silently.
    banner: { js: `import 'reflect-metadata';\n${ESM_BANNER}` },
    external: EXTERNAL,
    // Nest names providers, loggers and errors after their classes. The wrappers this adds where the
    // language would give the same name anyway are blanked out after the build (dropNameWrappers).
    keepNames: true,
    minifyWhitespace: true,
    minifySyntax: true,
    sourcemap: 'linked',
    legalComments: 'none',
    metafile: true,
    absWorkingDir: root,
    logLevel: 'warning',
    plugins: [ownModuleUrls, packageDirnames, nativeAddons, namedCjsDynamicImports],
  });
  await checkNoDefaultOnlyChunks();
  await dropRedundantNameWrappers();
  // Which chunk holds which file, paths relative to the project (test/e2e/lazy-modules.e2e-spec.ts
  // reads it; so does esbuild's bundle analyzer).
  await writeFile(join(outdir, 'metafile.json'), JSON.stringify(result.metafile));
  return join(outdir, 'main.mjs');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  process.stdout.write(`bundled ${await bundleServer()}\n`);
}
