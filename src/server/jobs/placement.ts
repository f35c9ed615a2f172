/**
 * Placement: which worker a stack's job runs on. Pure, so the rules are unit tested: the worker must
 * be connected and reporting (healthy or degraded), run the driver every service needs, carry every
 * label the services ask for, and have the CPU and memory left that the stack reserves. Among the
 * workers that fit, the one with the largest share of free memory wins (spread), then free CPU, then
 * the id, so the choice is deterministic.
 */

export interface PlacementCandidate {
  id: string;
  status: string;
  connected: boolean;
  driver: string;
  labels: Record<string, string>;
  capacity: { cpu: number; memory_bytes: number };
  /** What stacks already placed on the worker reserve. */
  reserved: { cpu: number; memory_bytes: number };
}

export interface PlacementRequest {
  /** The driver every service needs; a stack mixing drivers cannot be placed on one worker. */
  drivers: string[];
  labels: Record<string, string>;
  cpu: number;
  memory_bytes: number;
  /** The worker the stack runs on now; it is kept when it still fits. */
  current: string | null;
}

export type PlacementResult =
  { ok: true; workerId: string } | { ok: false; reason: string; rejections: Record<string, string> };

const PLACEABLE = new Set(['healthy', 'degraded']);

/** Why `worker` cannot take the request, or null when it can. */
export function rejection(worker: PlacementCandidate, req: PlacementRequest): string | null {
  if (!worker.connected) return 'not connected';
  if (!PLACEABLE.has(worker.status)) return `status ${worker.status}`;
  const drivers = [...new Set(req.drivers)];
  if (drivers.length > 1) return `services need drivers ${drivers.join(' and ')}`;
  if (drivers.length === 1 && drivers[0] !== worker.driver)
    return `driver ${worker.driver}, needs ${drivers[0]}`;
  for (const [key, value] of Object.entries(req.labels)) {
    if (worker.labels[key] !== value) return `label ${key}=${value} missing`;
  }
  // A stack already on this worker does not count against itself.
  const freeCpu = worker.capacity.cpu - worker.reserved.cpu;
  const freeMemory = worker.capacity.memory_bytes - worker.reserved.memory_bytes;
  if (req.cpu > freeCpu + 1e-9) return `needs ${req.cpu} CPU, ${round(Math.max(0, freeCpu))} free`;
  if (req.memory_bytes > freeMemory)
    return `needs ${req.memory_bytes} bytes of memory, ${Math.max(0, freeMemory)} free`;
  return null;
}

export function place(candidates: PlacementCandidate[], req: PlacementRequest): PlacementResult {
  const rejections: Record<string, string> = {};
  const fits: PlacementCandidate[] = [];
  for (const worker of candidates) {
    const why = rejection(worker, req);
    if (why === null) fits.push(worker);
    else rejections[worker.id] = why;
  }
  const current = fits.find((w) => w.id === req.current);
  if (current) return { ok: true, workerId: current.id };
  if (fits.length === 0) {
    const reason =
      candidates.length === 0
        ? 'no worker is connected'
        : `no worker fits (${Object.entries(rejections)
            .slice(0, 5)
            .map(([id, why]) => `${id}: ${why}`)
            .join('; ')})`;
    return { ok: false, reason, rejections };
  }
  const share = (w: PlacementCandidate, key: 'cpu' | 'memory_bytes') =>
    w.capacity[key] > 0 ? (w.capacity[key] - w.reserved[key]) / w.capacity[key] : 0;
  fits.sort(
    (a, b) =>
      share(b, 'memory_bytes') - share(a, 'memory_bytes') ||
      share(b, 'cpu') - share(a, 'cpu') ||
      (a.id < b.id ? -1 : a.id > b.id ? 1 : 0),
  );
  return { ok: true, workerId: fits[0].id };
}

const round = (n: number) => Math.round(n * 100) / 100;
