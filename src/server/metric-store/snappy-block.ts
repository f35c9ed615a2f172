/**
 * Snappy block format checks before decompression: the declared length is read first, so an
 * oversized body is refused before anything is allocated, and the tag stream is walked so that a
 * malformed one is refused as such (snappyjs, which then does the copying, leaves a short output
 * zero-filled and drops bytes past the declared end silently).
 */
import snappy from 'snappyjs';
import { MetricInputError } from './errors.js';

/** The uncompressed length a snappy block declares, or -1 if it does not declare one. */
export function snappyDeclaredLength(body: Uint8Array): number {
  let n = 0;
  for (let i = 0; i < 5 && i < body.length; i++) {
    n += (body[i] & 0x7f) * 2 ** (7 * i);
    if (body[i] < 0x80) return n <= 0xffffffff ? n : -1;
  }
  return -1;
}

/** Lengths of the preamble varint. */
function preambleLength(body: Uint8Array): number {
  let i = 0;
  while (body[i] >= 0x80) i++;
  return i + 1;
}

/** Whether the tags, decoded, produce exactly `declared` bytes with every copy inside its output. */
function wellFormed(body: Uint8Array, declared: number): boolean {
  let pos = preambleLength(body);
  let out = 0;
  while (pos < body.length) {
    const tag = body[pos++];
    let len: number;
    let offset = 0;
    switch (tag & 3) {
      case 0: {
        len = (tag >>> 2) + 1;
        if (len > 60) {
          const extra = len - 60;
          if (pos + extra > body.length) return false;
          len = 1;
          for (let i = 0; i < extra; i++) len += body[pos + i] * 2 ** (8 * i);
          pos += extra;
        }
        if (pos + len > body.length) return false;
        pos += len;
        break;
      }
      case 1:
        if (pos + 1 > body.length) return false;
        len = ((tag >>> 2) & 7) + 4;
        offset = ((tag >>> 5) << 8) | body[pos++];
        break;
      case 2:
        if (pos + 2 > body.length) return false;
        len = (tag >>> 2) + 1;
        offset = body[pos] | (body[pos + 1] << 8);
        pos += 2;
        break;
      default:
        if (pos + 4 > body.length) return false;
        len = (tag >>> 2) + 1;
        offset = (body[pos] | (body[pos + 1] << 8) | (body[pos + 2] << 16)) + body[pos + 3] * 2 ** 24;
        pos += 4;
    }
    if ((tag & 3) !== 0 && (offset === 0 || offset > out)) return false;
    out += len;
    if (out > declared) return false;
  }
  return out === declared;
}

/** Decompresses a snappy block of at most maxBytes; MetricInputError (413 when too large). */
export function uncompressSnappyBlock(body: Uint8Array, maxBytes: number): Uint8Array {
  const declared = snappyDeclaredLength(body);
  if (declared < 0)
    throw new MetricInputError('body is not snappy-compressed (block format): no length preamble');
  if (declared > maxBytes)
    throw new MetricInputError(
      `decompressed body of ${declared} bytes is over the limit of ${maxBytes}`,
      413,
    );
  if (!wellFormed(body, declared))
    throw new MetricInputError('body is not valid snappy-compressed data (block format)');
  return snappy.uncompress(body, maxBytes);
}
