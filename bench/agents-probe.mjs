// Preloaded into the service by bench/agents.mjs (NODE_OPTIONS=--import=<this file>), which stays
// otherwise unchanged: once a second, appends the event loop's delay (p99 and max over that second)
// and every garbage collection pause of that second to BENCH_PROBE_FILE as one JSON line.
import { appendFileSync } from 'node:fs';
import { monitorEventLoopDelay, performance, PerformanceObserver } from 'node:perf_hooks';

const file = process.env.BENCH_PROBE_FILE;
if (file) {
  const RESOLUTION_MS = 5;
  const delay = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  delay.enable();
  let gc = [];
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      // kind: 1 minor (scavenge), 4 major (mark-compact), 8 incremental marking, 16 weak callbacks.
      gc.push([Math.round(performance.timeOrigin + e.startTime), e.duration, e.detail?.kind ?? 0]);
    }
  }).observe({ entryTypes: ['gc'] });
  setInterval(() => {
    // The histogram holds whole timer periods; the delay is what exceeds the resolution.
    const line = {
      t: Date.now(),
      p99: Math.max(0, delay.percentile(99) / 1e6 - RESOLUTION_MS),
      max: Math.max(0, delay.max / 1e6 - RESOLUTION_MS),
      heap: Math.round(process.memoryUsage().heapUsed / 2 ** 20),
      gc,
    };
    gc = [];
    delay.reset();
    appendFileSync(file, `${JSON.stringify(line)}\n`);
  }, 1000).unref();
}

// With BENCH_PROBE_PROFILE_DIR set, SIGUSR2 starts a CPU profile and the next SIGUSR2 writes it
// there (`<n>.cpuprofile`, for Chrome DevTools or bench/cpuprofile-top.mjs): the bench profiles
// the measured windows only, not start-up, enrollment or connection. With BENCH_PROBE_ALLOCATIONS=1
// as well, the same window's allocations are sampled too (`<n>.heapprofile`, every 32 KiB allocated,
// collected objects included: where the garbage collector's work comes from).
const profileDir = process.env.BENCH_PROBE_PROFILE_DIR;
if (profileDir) {
  const { Session } = await import('node:inspector');
  const { writeFileSync } = await import('node:fs');
  const session = new Session();
  session.connect();
  const post = (method, params) =>
    new Promise((resolve, reject) =>
      session.post(method, params, (err, result) => (err ? reject(err) : resolve(result))),
    );
  await post('Profiler.enable');
  const allocations = process.env.BENCH_PROBE_ALLOCATIONS === '1';
  if (allocations) await post('HeapProfiler.enable');
  let running = false;
  let count = 0;
  process.on('SIGUSR2', () => {
    void (async () => {
      if (!running) {
        running = true;
        await post('Profiler.start');
        if (allocations)
          await post('HeapProfiler.startSampling', {
            samplingInterval: 32 * 1024,
            includeObjectsCollectedByMajorGC: true,
            includeObjectsCollectedByMinorGC: true,
          });
        return;
      }
      running = false;
      const { profile } = await post('Profiler.stop');
      writeFileSync(`${profileDir}/${++count}.cpuprofile`, JSON.stringify(profile));
      if (allocations) {
        const { profile: heap } = await post('HeapProfiler.stopSampling');
        writeFileSync(`${profileDir}/${count}.heapprofile`, JSON.stringify(heap));
      }
    })();
  });
}

// With BENCH_PROBE_MEMORY_FILE set, SIGWINCH runs two full garbage collections, gives free memory
// back to the system (malloc_trim) and appends the process's memory, split by where it lives, to that file as one JSON line (bench/agent-memory.mjs).
const memoryFile = process.env.BENCH_PROBE_MEMORY_FILE;
if (memoryFile) {
  const { setFlagsFromString, getHeapSpaceStatistics, writeHeapSnapshot } = await import('node:v8');
  const snapshots = process.env.BENCH_PROBE_HEAP_SNAPSHOT_DIR;
  let taken = 0;
  const { runInNewContext } = await import('node:vm');
  const { appendFileSync: append, readFileSync } = await import('node:fs');
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc');
  const kib = (line) => Number(/(\d+) kB/.exec(line)?.[1] ?? 0);
  // After the collections, free memory given back (as the service does every 30 s): the reading is
  // then what is in use, whether or not the service's own trim has run since the last burst.
  const { createRequire } = await import('node:module');
  let trim;
  try {
    trim = createRequire(import.meta.url)('../dist/native/malloc-trim.node').trim;
  } catch {
    trim = undefined;
  }
  process.on('SIGWINCH', async () => {
    gc();
    gc();
    await trim?.();
    const m = process.memoryUsage();
    const status = readFileSync('/proc/self/status', 'utf8');
    const rssAnon = kib(/^RssAnon:.*$/m.exec(status)?.[0] ?? '');
    const spaces = Object.fromEntries(getHeapSpaceStatistics().map((s) => [s.space_name, s.space_used_size]));
    append(memoryFile, `${JSON.stringify({ t: Date.now(), ...m, rssAnon: rssAnon * 1024, spaces })}\n`);
    // For a closer look (Chrome DevTools, or grouped by constructor): after the figures, since
    // writing a snapshot allocates.
    if (snapshots) writeHeapSnapshot(`${snapshots}/${++taken}.heapsnapshot`);
  });
}
