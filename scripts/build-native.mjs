#!/usr/bin/env node
// Builds the optional native addon native/malloc-trim.c into dist/native/malloc-trim.node (or the
// directory given with --out) with the system C compiler and Node's own headers. It has no
// dependencies and uses only Node-API, so one build runs on any Node version of this machine.
//
// The service runs without it (it logs once that idle memory is not given back): where there is no C
// compiler, no Node headers or no glibc (Linux only), this prints why and exits 0, so `npm run build`
// never fails for it. `--require` makes those cases fail instead (the tests use it).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const required = args.includes('--require');
const outAt = args.indexOf('--out');
const outDir = outAt >= 0 ? resolve(args[outAt + 1]) : join(root, 'dist', 'native');
const source = join(root, 'native', 'malloc-trim.c');
const output = join(outDir, 'malloc-trim.node');

function skip(reason) {
  const message = `native addon not built (${reason}); the service runs without it and does not give idle memory back to the system`;
  if (required) {
    console.error(`build-native: ${message}`);
    process.exit(1);
  }
  console.warn(`build-native: ${message}`);
  process.exit(0);
}

if (process.platform !== 'linux') skip(`${process.platform} is not Linux`);

// Node's headers: next to the running node (official tarballs and images), npm's nodedir, Debian's.
const includeDir = [
  process.env.npm_config_nodedir && join(process.env.npm_config_nodedir, 'include', 'node'),
  join(dirname(process.execPath), '..', 'include', 'node'),
  '/usr/include/node',
  '/usr/local/include/node',
].find((dir) => dir && existsSync(join(dir, 'node_api.h')));
if (includeDir === undefined) skip("Node's headers (node_api.h) not found");

const compiler = [process.env.CC, 'cc', 'gcc', 'clang'].find((cc) => {
  if (!cc) return false;
  try {
    execFileSync(cc, ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
});
if (compiler === undefined) skip('no C compiler (cc, gcc or clang) on PATH');

mkdirSync(outDir, { recursive: true });
try {
  execFileSync(
    compiler,
    ['-shared', '-fPIC', '-O2', '-Wall', '-Wextra', '-Werror', `-I${includeDir}`, '-o', output, source],
    { stdio: 'inherit' },
  );
} catch {
  skip(`${compiler} failed on ${source}`);
}
console.log(`build-native: ${output}`);
