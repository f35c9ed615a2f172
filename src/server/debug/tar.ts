/**
 * A minimal POSIX ustar writer: regular files only, each a 512-byte header, its bytes and zero
 * padding to the next 512-byte block, then two zero blocks. Enough for the debug bundle, whose
 * entries have short names and sizes known before they are written; GNU tar, bsdtar and every
 * library read it.
 */
import type { Readable } from 'node:stream';

export const BLOCK = 512;
/** ustar's size field: 11 octal digits. */
export const MAX_ENTRY_BYTES = 8 ** 11 - 1;

export interface TarEntry {
  /** A relative path of at most 100 bytes, `/` separated. */
  name: string;
  size: number;
  mtime: Date;
  /** Permission bits; 0644 by default. */
  mode?: number;
}

const octal = (value: number, width: number): string => value.toString(8).padStart(width - 1, '0') + '\0';

/** The 512-byte ustar header of one regular file. */
export function tarHeader(entry: TarEntry): Buffer {
  const name = Buffer.from(entry.name, 'utf8');
  if (name.length === 0 || name.length > 100 || entry.name.startsWith('/') || entry.name.includes('..'))
    throw new Error(`tar entry name not allowed: ${JSON.stringify(entry.name)}`);
  if (!Number.isSafeInteger(entry.size) || entry.size < 0 || entry.size > MAX_ENTRY_BYTES)
    throw new Error(`tar entry size out of range: ${entry.size}`);
  const header = Buffer.alloc(BLOCK, 0);
  name.copy(header, 0);
  header.write(octal(entry.mode ?? 0o644, 8), 100, 'ascii');
  header.write(octal(0, 8), 108, 'ascii'); // uid
  header.write(octal(0, 8), 116, 'ascii'); // gid
  header.write(octal(entry.size, 12), 124, 'ascii');
  header.write(octal(Math.max(0, Math.floor(entry.mtime.getTime() / 1000)), 12), 136, 'ascii');
  header.write('        ', 148, 'ascii'); // the checksum counts its own field as spaces
  header.write('0', 156, 'ascii'); // regular file
  header.write('ustar\0', 257, 'ascii');
  header.write('00', 263, 'ascii');
  header.write('root', 265, 'ascii'); // uname
  header.write('root', 297, 'ascii'); // gname
  let sum = 0;
  for (const byte of header) sum += byte;
  header.write(sum.toString(8).padStart(6, '0') + '\0 ', 148, 'ascii');
  return header;
}

/** Zero bytes that complete an entry of `size` bytes to whole blocks. */
export const padding = (size: number): Buffer => Buffer.alloc((BLOCK - (size % BLOCK)) % BLOCK, 0);

/** The end-of-archive marker. */
export const trailer = (): Buffer => Buffer.alloc(2 * BLOCK, 0);

/**
 * One entry as chunks: header, exactly `entry.size` bytes of `body` (an error when it holds more or
 * fewer, since the header already promised the size), padding.
 */
export async function* tarEntry(entry: TarEntry, body: Readable | Buffer): AsyncGenerator<Buffer> {
  yield tarHeader(entry);
  let written = 0;
  if (Buffer.isBuffer(body)) {
    written = body.length;
    if (written === entry.size) yield body;
  } else {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      written += chunk.length;
      if (written > entry.size) break;
      yield chunk;
    }
  }
  if (written !== entry.size)
    throw new Error(`tar entry ${entry.name}: ${written} bytes where the header says ${entry.size}`);
  yield padding(entry.size);
}
