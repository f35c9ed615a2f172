// `node bench/cpuprofile-top.mjs <file.cpuprofile> [rows]`: where a V8 CPU profile's time went,
// as self time per package (or Node internals, GC, idle) and per function, in % of the profile's
// wall time (so "(idle)" is the event loop waiting). Given a `.heapprofile` (sampled allocations,
// bench/agents-probe.mjs), the bytes allocated per function, and per the nearest function of the
// service on the stack (what a library allocated on the service's behalf counts for its caller).
import { existsSync, readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { table } from './lib.mjs';

// A frame of the bundle (`dist/server/bundle/*.mjs`) is named by the source it came from, through
// the bundle's source map: `src/server/...ts:line` rather than a line of the bundle.
const maps = new Map();
const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');
function original(f) {
  if (!f.url.startsWith('file://') || !f.url.includes('/bundle/')) return f;
  if (!maps.has(f.url)) {
    const file = `${fileURLToPath(f.url)}.map`;
    maps.set(f.url, existsSync(file) ? new SourceMap(JSON.parse(readFileSync(file, 'utf8'))) : null);
  }
  const entry = maps.get(f.url)?.findEntry(f.lineNumber, f.columnNumber);
  if (!entry?.originalSource) return f;
  // The service's own sources are under src/; a library's map may name paths that do not exist
  // (TypeORM's), which count as that library's.
  const resolved = resolve(dirname(fileURLToPath(f.url)), entry.originalSource);
  const own = resolved.startsWith(`${REPO}/src/`) && existsSync(resolved);
  const url = own
    ? `file:///dist/${resolved.slice(REPO.length + 1)}`
    : `file:///node_modules/${resolved.includes('/node_modules/') ? resolved.slice(resolved.lastIndexOf('/node_modules/') + 14) : `(bundled)/${entry.originalSource.replace(/^(\.\.\/)+/, '')}`}`;
  return { ...f, url, lineNumber: entry.originalLine };
}

export function summarise(profile, rows = 20) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map();
  const deltas = profile.timeDeltas;
  for (let i = 0; i < profile.samples.length; i++) {
    // Each sample's time is the delta to the next one.
    const dt = deltas[i + 1] ?? 0;
    self.set(profile.samples[i], (self.get(profile.samples[i]) ?? 0) + dt);
  }
  const total = profile.endTime - profile.startTime;
  const byFunction = new Map();
  const byPackage = new Map();
  for (const [id, us] of self) {
    const f = original(byId.get(id).callFrame);
    const where = f.url ? `${shortUrl(f.url)}:${f.lineNumber + 1}` : '';
    const fn = `${f.functionName || '(anonymous)'} ${where}`.trim();
    byFunction.set(fn, (byFunction.get(fn) ?? 0) + us);
    const pkg = packageOf(f);
    byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + us);
  }
  const top = (map) =>
    [...map]
      .sort((a, b) => b[1] - a[1])
      .slice(0, rows)
      .map(([k, us]) => [k, ((us / total) * 100).toFixed(1), (us / 1000).toFixed(0)]);
  return {
    seconds: total / 1e6,
    packages: top(byPackage),
    functions: top(byFunction),
  };
}

function shortUrl(url) {
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) return url.slice(nm + 'node_modules/'.length);
  const dist = url.indexOf('/dist/');
  if (dist >= 0) return url.slice(dist + 1);
  return url.replace(/^file:\/\//, '');
}

function packageOf(f) {
  if (!f.url) return f.functionName.startsWith('(') ? f.functionName : '(native)';
  if (f.url.startsWith('node:')) return 'node: internals';
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(f.url);
  if (m) return m[1];
  if (f.url.includes('/dist/')) return 'the service (dist/)';
  return shortUrl(f.url);
}

export function summariseAllocations(profile, rows = 20) {
  const self = new Map();
  const byCaller = new Map();
  let total = 0;
  const walk = (node, caller) => {
    const f = original(node.callFrame);
    const fn =
      `${f.functionName || '(anonymous)'} ${f.url ? `${shortUrl(f.url)}:${f.lineNumber + 1}` : ''}`.trim();
    const mine = f.url.includes('/dist/') && !f.url.includes('node_modules/') ? fn : caller;
    if (node.selfSize > 0) {
      total += node.selfSize;
      self.set(fn, (self.get(fn) ?? 0) + node.selfSize);
      const c = mine ?? '(outside the service)';
      byCaller.set(c, (byCaller.get(c) ?? 0) + node.selfSize);
    }
    for (const child of node.children ?? []) walk(child, mine);
  };
  walk(profile.head, undefined);
  const top = (map) =>
    [...map]
      .sort((a, b) => b[1] - a[1])
      .slice(0, rows)
      .map(([k, bytes]) => [k, ((bytes / total) * 100).toFixed(1), (bytes / 2 ** 20).toFixed(1)]);
  return { mib: total / 2 ** 20, functions: top(self), callers: top(byCaller) };
}

if (import.meta.url === `file://${process.argv[1]}` && process.argv[2]?.endsWith('.heapprofile')) {
  const [file, rows = '20'] = process.argv.slice(2);
  const s = summariseAllocations(JSON.parse(readFileSync(file, 'utf8')), Number(rows));
  console.log(`${file}: ${s.mib.toFixed(0)} MiB allocated (sampled)\n`);
  console.log(table('Allocated by function', ['function', '% of bytes', 'MiB'], s.functions));
  console.log(table('Allocated on behalf of', ['service function', '% of bytes', 'MiB'], s.callers));
} else if (import.meta.url === `file://${process.argv[1]}`) {
  const [file, rows = '20'] = process.argv.slice(2);
  const s = summarise(JSON.parse(readFileSync(file, 'utf8')), Number(rows));
  console.log(`${file}: ${s.seconds.toFixed(1)} s profiled\n`);
  console.log(table('Self time by package', ['package', '% of wall time', 'ms'], s.packages));
  console.log(table('Self time by function', ['function', '% of wall time', 'ms'], s.functions));
}
