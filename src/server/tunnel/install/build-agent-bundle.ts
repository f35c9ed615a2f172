// Build time only (`npm run build` runs the compiled file): bundles the agent into one ES module
// that runs with nothing but Node.js >= 20, which `install.sh` and `install.ps1` download from
// `/downloads/stack-agent.mjs`. The service never imports this file; esbuild is a devDependency.
//
// Two things the agent reads from disk at run time cannot be read by a lone file, so the bundle
// carries them: the gRPC contract (`agent.proto`, loaded by src/contracts/agent-protocol through
// `@grpc/proto-loader`'s `loadSync`) and its version (src/agent/main.ts reads package.json). The
// non-bundled agent (dist/agent/main.js) is untouched by this and keeps reading both files.
import { build, type Plugin } from 'esbuild';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ESM_BANNER } from '../../build/esm-banner.js';
import { packageRoot } from './package-root.js';

// Every path the bundle depends on, in one place (the source tree is being restructured).
const ROOT = packageRoot(import.meta.url);
export const BUNDLE_PATHS = {
  entry: join(ROOT, 'src/agent/main.ts'),
  protos: [join(ROOT, 'src/contracts/agent-protocol/agent.proto')],
  packageJson: join(ROOT, 'package.json'),
  outfile: join(ROOT, 'dist/downloads/stack-agent.mjs'),
};

const SOURCE_DIR = join(ROOT, 'src') + sep;
const PROTO_LOADER = '@grpc/proto-loader';
const SHIM_NAMESPACE = 'inlined-proto-loader';
/** `readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')`, at any depth. */
const PACKAGE_JSON_READ =
  /readFileSync\(\s*new URL\(\s*['"](?:\.\.\/)+package\.json['"]\s*,\s*import\.meta\.url\s*\)\s*,\s*['"]utf-?8['"]\s*\)/g;

/**
 * For the project's own imports of `@grpc/proto-loader`, the real module with a `loadSync` that takes
 * the inlined text of a known .proto (by file name) instead of reading the file: parsed with the same
 * options by protobufjs and handed to proto-loader's own `fromJSON`. Other names, and the imports of
 * dependencies, get the real `loadSync`.
 */
function inlineProtos(protos: string[]): Plugin {
  const texts = Object.fromEntries(protos.map((file) => [basename(file), readFileSync(file, 'utf8')]));
  return {
    name: 'inline-protos',
    setup(b) {
      b.onResolve({ filter: /^@grpc\/proto-loader$/ }, (args) =>
        args.importer.startsWith(SOURCE_DIR) ? { path: PROTO_LOADER, namespace: SHIM_NAMESPACE } : undefined,
      );
      b.onLoad({ filter: /.*/, namespace: SHIM_NAMESPACE }, () => ({
        // Its own require of the real module comes from outside src/, so it resolves normally.
        resolveDir: ROOT,
        loader: 'js',
        contents: `
          const real = require(${JSON.stringify(PROTO_LOADER)});
          const protobuf = require('protobufjs');
          const texts = ${JSON.stringify(texts)};
          module.exports = {
            ...real,
            loadSync(filename, options = {}) {
              const name = String(filename).split(/[\\\\/]/).pop();
              if (!Object.hasOwn(texts, name)) return real.loadSync(filename, options);
              const root = new protobuf.Root();
              protobuf.parse(texts[name], root, options);
              root.resolveAll();
              return real.fromJSON(root.toJSON(), options);
            },
          };`,
      }));
    },
  };
}

/** Puts the version into the bundle where the agent would read package.json beside dist/. */
function inlineVersion(packageJson: string): Plugin {
  const { version } = JSON.parse(readFileSync(packageJson, 'utf8')) as { version: string };
  const replacement = JSON.stringify(JSON.stringify({ version }));
  return {
    name: 'inline-version',
    setup(b) {
      b.onLoad({ filter: /\.ts$/ }, (args) => {
        if (!args.path.startsWith(SOURCE_DIR)) return undefined;
        const source = readFileSync(args.path, 'utf8');
        const replaced = source.replace(PACKAGE_JSON_READ, replacement);
        return replaced === source ? undefined : { contents: replaced, loader: 'ts' };
      });
    },
  };
}

/** Writes the bundle; returns its path. */
export async function bundleAgent(outfile = BUNDLE_PATHS.outfile): Promise<string> {
  await build({
    entryPoints: [BUNDLE_PATHS.entry],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    banner: { js: ESM_BANNER },
    // ssh2 (under dockerode) and cpu-features try optional native add-ons inside try/catch and
    // fall back to JavaScript when they are missing, as they are next to a lone bundle.
    external: ['*.node'],
    plugins: [inlineProtos(BUNDLE_PATHS.protos), inlineVersion(BUNDLE_PATHS.packageJson)],
    legalComments: 'none',
    logLevel: 'warning',
  });
  return outfile;
}

/**
 * Runs a copy of the bundle in an empty directory (no node_modules, package.json or .proto) with
 * `args` and an empty environment (node is the running one, by path).
 */
export function runBundleAlone(file: string, args: string[]): { status: number | null; output: string } {
  const dir = mkdtempSync(join(tmpdir(), 'stack-agent-bundle-'));
  try {
    const copy = join(dir, 'stack-agent.mjs');
    copyFileSync(file, copy);
    const run = spawnSync(process.execPath, [copy, ...args], {
      cwd: dir,
      encoding: 'utf8',
      env: {},
      timeout: 30_000,
    });
    return { status: run.status, output: `${run.stdout}${run.stderr}` };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Proves a lone copy gets as far as it can without a network: it loads the protocol and its
 * version, then stops because it has neither an identity nor a join token (before any request).
 */
export function checkBundleAlone(file: string): void {
  const run = runBundleAlone(file, [
    '--server',
    'http://127.0.0.1:9',
    '--probe-port',
    'off',
    '--data-dir',
    'data',
  ]);
  if (run.status !== 1 || !run.output.includes('no identity in the data directory')) {
    throw new Error(`${file} does not run on its own (exit ${run.status}):\n${run.output}`);
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const file = await bundleAgent();
  checkBundleAlone(file);
  process.stdout.write(`bundled ${file}\n`);
}
