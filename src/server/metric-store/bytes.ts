/**
 * Byte-level writer and reader for the metric store's binary formats (chunk headers, write-ahead
 * batches): unsigned and zigzag varints for any safe integer (arithmetic, since bit operators stop
 * at 32 bits), raw bytes and UTF-8 strings. The reader throws FormatError on truncated or
 * impossible input instead of reading past the end.
 */

export class FormatError extends Error {
  override name = 'FormatError';
}

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

export class ByteWriter {
  bytes: Uint8Array;
  length = 0;

  constructor(capacity = 256) {
    this.bytes = new Uint8Array(Math.max(16, capacity));
  }

  private reserve(n: number): void {
    if (this.length + n <= this.bytes.length) return;
    const next = new Uint8Array(Math.max(this.bytes.length * 2, this.length + n));
    next.set(this.bytes.subarray(0, this.length));
    this.bytes = next;
  }

  byte(b: number): void {
    this.reserve(1);
    this.bytes[this.length++] = b;
  }

  /** A non-negative safe integer, 7 bits a byte, least significant first. */
  uvarint(n: number): void {
    this.reserve(8);
    while (n >= 0x80) {
      this.bytes[this.length++] = (n % 0x80) | 0x80;
      n = Math.floor(n / 0x80);
    }
    this.bytes[this.length++] = n;
  }

  /** A signed safe integer, zigzag-mapped so small magnitudes stay short. */
  varint(n: number): void {
    this.uvarint(n < 0 ? -2 * n - 1 : 2 * n);
  }

  raw(b: Uint8Array): void {
    this.reserve(b.length);
    this.bytes.set(b, this.length);
    this.length += b.length;
  }

  /** Length-prefixed bytes. */
  blob(b: Uint8Array): void {
    this.uvarint(b.length);
    this.raw(b);
  }

  string(s: string): void {
    this.blob(encoder.encode(s));
  }

  finish(): Uint8Array {
    return this.bytes.slice(0, this.length);
  }
}

export class ByteReader {
  pos: number;

  constructor(
    readonly bytes: Uint8Array,
    start = 0,
    readonly end = bytes.length,
  ) {
    this.pos = start;
  }

  get remaining(): number {
    return this.end - this.pos;
  }

  byte(): number {
    if (this.pos >= this.end) throw new FormatError('truncated');
    return this.bytes[this.pos++];
  }

  uvarint(): number {
    let n = 0;
    let scale = 1;
    for (let i = 0; i < 8; i++) {
      const b = this.byte();
      n += (b & 0x7f) * scale;
      if (b < 0x80) {
        // 2^53 itself is exact and is the widest span between two valid times.
        if (n > 2 ** 53) break;
        return n;
      }
      scale *= 0x80;
    }
    throw new FormatError('varint out of range');
  }

  varint(): number {
    const z = this.uvarint();
    return z % 2 === 0 ? z / 2 : -(z + 1) / 2;
  }

  raw(n: number): Uint8Array {
    if (n > this.remaining) throw new FormatError('truncated');
    const out = this.bytes.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }

  blob(): Uint8Array {
    return this.raw(this.uvarint());
  }

  string(): string {
    try {
      return decoder.decode(this.blob());
    } catch (err) {
      if (err instanceof FormatError) throw err;
      throw new FormatError('string is not valid UTF-8');
    }
  }
}
