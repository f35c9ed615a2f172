/** Seeded randomness for property-style tests: the same seed gives the same cases on every run. */
export class Random {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** mulberry32: a uniform uint32. */
  uint32(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  }

  /** Uniform in [0, 1). */
  next(): number {
    return this.uint32() / 2 ** 32;
  }

  /** Integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(0, items.length - 1)];
  }

  /** Standard normal (Box-Muller). */
  normal(): number {
    return Math.sqrt(-2 * Math.log(1 - this.next())) * Math.cos(2 * Math.PI * this.next());
  }

  /** A float64 with uniformly random bits: every class of value, NaN payloads included. */
  bitsFloat(into: Float64Array, at: number): void {
    const halves = new Uint32Array(into.buffer, into.byteOffset + at * 8, 2);
    halves[0] = this.uint32();
    halves[1] = this.uint32();
  }

  string(alphabet: string, min: number, max: number): string {
    let s = '';
    const n = this.int(min, max);
    for (let i = 0; i < n; i++) s += alphabet[this.int(0, alphabet.length - 1)];
    return s;
  }
}

/** A float64 array holding exactly these 64-bit patterns. */
export function floatsFromBits(patterns: readonly bigint[]): Float64Array {
  const out = new Float64Array(patterns.length);
  const view = new DataView(out.buffer);
  patterns.forEach((p, i) => view.setBigUint64(i * 8, p, true));
  return out;
}

/** Where two float arrays first differ in bits (or length), as text; undefined when identical. */
export function bitDifference(a: Float64Array, b: Float64Array): string | undefined {
  if (a.length !== b.length) return `lengths ${a.length} and ${b.length}`;
  const x = new DataView(a.buffer, a.byteOffset, a.byteLength);
  const y = new DataView(b.buffer, b.byteOffset, b.byteLength);
  for (let i = 0; i < a.length; i++) {
    const p = x.getBigUint64(i * 8, true);
    const q = y.getBigUint64(i * 8, true);
    if (p !== q) return `index ${i}: 0x${p.toString(16)} and 0x${q.toString(16)}`;
  }
  return undefined;
}
