/**
 * Quantity text of stack definitions and the stack-kit catalogue: CPU in cores or millicores, memory
 * in bytes or with a unit, retention in days, storage in Gi. Each parser returns undefined for text
 * it does not accept, so callers decide how to report it.
 */

const BINARY: Record<string, number> = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40 };
const DECIMAL: Record<string, number> = { k: 1e3, K: 1e3, M: 1e6, G: 1e9, T: 1e12 };

/** CPU as cores (`0.5`, `2`, `"1.5"`) or millicores (`"500m"`); rounded to whole millicores, > 0. */
export function parseCpu(value: unknown): number | undefined {
  let cores: number;
  if (typeof value === 'number') cores = value;
  else if (typeof value === 'string' && /^\d+m$/.test(value)) cores = Number(value.slice(0, -1)) / 1000;
  else if (typeof value === 'string' && /^\d+(\.\d+)?$/.test(value)) cores = Number(value);
  else return undefined;
  if (!Number.isFinite(cores)) return undefined;
  const milli = Math.round(cores * 1000);
  return milli >= 1 ? milli / 1000 : undefined;
}

/**
 * Memory as whole bytes (`268435456`) or a number with a unit: binary `Ki Mi Gi Ti` or decimal
 * `k M G T` (`"256Mi"`, `"1.5Gi"`, `"500M"`). Returns whole bytes (> 0).
 */
export function parseMemory(value: unknown): number | undefined {
  let bytes: number;
  if (typeof value === 'number') {
    if (!Number.isInteger(value)) return undefined;
    bytes = value;
  } else if (typeof value === 'string') {
    const match = /^(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|K|M|G|T)?$/.exec(value);
    if (!match) return undefined;
    const unit = match[2];
    bytes = Math.floor(Number(match[1]) * (unit === undefined ? 1 : (BINARY[unit] ?? DECIMAL[unit])));
  } else return undefined;
  return Number.isSafeInteger(bytes) && bytes > 0 ? bytes : undefined;
}

/** `"15d"` → 15. Whole days, at least one. */
export function parseDays(value: unknown): number | undefined {
  if (typeof value !== 'string' || !/^\d+d$/.test(value)) return undefined;
  const days = Number(value.slice(0, -1));
  return Number.isSafeInteger(days) && days >= 1 ? days : undefined;
}

/** `"10Gi"` → 10. Whole GiB, at least one. */
export function parseGi(value: unknown): number | undefined {
  if (typeof value !== 'string' || !/^\d+Gi$/.test(value)) return undefined;
  const gi = Number(value.slice(0, -2));
  return Number.isSafeInteger(gi) && gi >= 1 ? gi : undefined;
}

/** Bytes as the largest exact binary unit, for messages: 2147483648 → "2Gi", 1000 → "1000". */
export function formatBytes(bytes: number): string {
  for (const unit of ['Ti', 'Gi', 'Mi', 'Ki']) {
    if (bytes >= BINARY[unit] && bytes % BINARY[unit] === 0) return `${bytes / BINARY[unit]}${unit}`;
  }
  return String(bytes);
}

/** Cores for messages: 0.5 → "0.5 cores", 1 → "1 core". */
export function formatCpu(cores: number): string {
  const value = Math.round(cores * 1000) / 1000;
  return `${value} ${value === 1 ? 'core' : 'cores'}`;
}
