/**
 * The big-endian bit stream the chunk encoder writes (chunk.ts; chunk-decode.ts reads it). Bits
 * go out 32 at a time through a uint32 accumulator: JS bit operators work on 32 bits, and 64-bit
 * float patterns travel as two uint32 halves so no value passes through float arithmetic.
 */

export class BitWriter {
  bytes: Uint8Array;
  /** Bytes already flushed. */
  private length = 0;
  /** Pending bits, left-aligned; `free` low bits still empty. */
  private cur = 0;
  private free = 32;

  constructor(capacity = 64) {
    this.bytes = new Uint8Array(Math.max(8, capacity));
  }

  /** Bits written so far. */
  get bitLength(): number {
    return this.length * 8 + (32 - this.free);
  }

  /** Writes the low `n` bits of `v`, 0 <= n <= 32. */
  write(v: number, n: number): void {
    if (n === 0) return;
    if (n < 32) v &= (1 << n) - 1;
    if (n < this.free) {
      this.free -= n;
      this.cur |= v << this.free;
      return;
    }
    const rest = n - this.free;
    this.cur |= v >>> rest;
    this.flushWord();
    if (rest === 0) {
      this.cur = 0;
      this.free = 32;
    } else {
      this.free = 32 - rest;
      this.cur = v << this.free;
    }
  }

  writeBit(bit: number): void {
    this.free -= 1;
    this.cur |= bit << this.free;
    if (this.free === 0) {
      this.flushWord();
      this.cur = 0;
      this.free = 32;
    }
  }

  /** Writes the low `n` bits (n <= 64) of the 64-bit pattern hi:lo. */
  write64(hi: number, lo: number, n: number): void {
    if (n > 32) {
      this.write(hi, n - 32);
      this.write(lo, 32);
    } else {
      this.write(lo, n);
    }
  }

  private flushWord(): void {
    if (this.length + 4 > this.bytes.length) this.grow(4);
    const c = this.cur;
    const b = this.bytes;
    const p = this.length;
    b[p] = c >>> 24;
    b[p + 1] = c >>> 16;
    b[p + 2] = c >>> 8;
    b[p + 3] = c;
    this.length = p + 4;
  }

  private grow(extra: number): void {
    const next = new Uint8Array(Math.max(this.bytes.length * 2, this.length + extra));
    next.set(this.bytes.subarray(0, this.length));
    this.bytes = next;
  }

  /** The bytes written, the last one zero-padded; the writer stays usable. */
  finish(): Uint8Array {
    const used = 32 - this.free;
    const tail = (used + 7) >>> 3;
    if (this.length + tail > this.bytes.length) this.grow(tail);
    const out = this.bytes.subarray(0, this.length + tail);
    for (let i = 0; i < tail; i++) out[this.length + i] = this.cur >>> (24 - 8 * i);
    return out;
  }

  /** Continues a stream of `bitLength` bits held in `bytes` (as finish() left them). */
  static resume(bytes: Uint8Array, bitLength: number): BitWriter {
    const w = new BitWriter(bytes.length + 64);
    const whole = bitLength >>> 5;
    w.bytes.set(bytes.subarray(0, whole * 4));
    w.length = whole * 4;
    // The last partial word: its bits are still pending in the accumulator.
    for (let i = whole * 4; i * 8 < bitLength; i++) {
      const n = Math.min(8, bitLength - i * 8);
      w.write(bytes[i] >>> (8 - n), n);
    }
    return w;
  }
}
