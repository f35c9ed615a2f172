// `node bench/cpuprofile-top.mjs <file.cpuprofile> [rows]`: where a V8 CPU profile's time went,
// as self time per package (or Node internals, GC, idle) and per function, in % of the profile's
// wall time (so "(idle)" is the event loop waiting).
import { readFileSync } from 'node:fs';
import { table } from './lib.mjs';

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
    const { callFrame: f } = byId.get(id);
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

if (import.meta.url === `file://${process.argv[1]}`) {
  const [file, rows = '20'] = process.argv.slice(2);
  const s = summarise(JSON.parse(readFileSync(file, 'utf8')), Number(rows));
  console.log(`${file}: ${s.seconds.toFixed(1)} s profiled\n`);
  console.log(table('Self time by package', ['package', '% of wall time', 'ms'], s.packages));
  console.log(table('Self time by function', ['function', '% of wall time', 'ms'], s.functions));
}
