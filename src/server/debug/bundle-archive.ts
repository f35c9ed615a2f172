/**
 * How the debug bundle is put together: each entry is written to a spool file in a private
 * directory under DATA_DIR (so its size is known before its tar header goes out, and memory holds
 * a page of rows at a time, never an entry), then the archive streams from those files through
 * gzip to the client.
 */
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { createReadStream, createWriteStream, type WriteStream } from 'node:fs';
import { Readable, type Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import type { DebugBundleEntry, DebugBundleEntryName } from '../../contracts/api/debug.js';
import { PRIVATE_FILE_MODE } from '../../contracts/private-files.js';
import { tarEntry, trailer } from './tar.js';

/** A spooled entry: where its bytes are, and what the manifest says of it. */
export interface SpooledEntry extends DebugBundleEntry {
  path: string;
}

/** A file written with backpressure, a chunk at a time. */
export class SpoolFile {
  private readonly out: WriteStream;
  private readonly closed: Promise<unknown>;

  constructor(readonly path: string) {
    this.out = createWriteStream(path, { mode: PRIVATE_FILE_MODE });
    this.closed = once(this.out, 'close');
  }

  async write(chunk: string | Buffer): Promise<void> {
    if (!this.out.write(chunk)) await once(this.out, 'drain');
  }

  async close(): Promise<void> {
    this.out.end();
    await this.closed;
  }
}

/**
 * Writes `{...head, "<key>": [item, item, ...], ...tail()}` one item per line, the items pulled
 * page by page: a JSON document of any length in constant memory.
 */
export async function writeJsonList<T>(
  path: string,
  head: Record<string, unknown>,
  key: string,
  pages: AsyncIterable<T[]>,
  tail: () => Record<string, unknown> = () => ({}),
): Promise<void> {
  const file = new SpoolFile(path);
  try {
    const opening = JSON.stringify(head);
    await file.write(`${opening.slice(0, -1)}${opening.length > 2 ? ',' : ''}${JSON.stringify(key)}:[`);
    let first = true;
    for await (const page of pages) {
      for (const item of page) {
        await file.write(`${first ? '' : ','}\n${JSON.stringify(item)}`);
        first = false;
      }
    }
    const closing = JSON.stringify(tail());
    await file.write(`\n]${closing.length > 2 ? `,${closing.slice(1)}` : '}'}\n`);
  } finally {
    await file.close();
  }
}

/** Size and SHA-256 of a spooled file, read once. */
export async function describeFile(path: string): Promise<{ size: number; sha256: string }> {
  const hash = createHash('sha256');
  let size = 0;
  for await (const chunk of createReadStream(path) as AsyncIterable<Buffer>) {
    hash.update(chunk);
    size += chunk.length;
  }
  return { size, sha256: hash.digest('hex') };
}

export async function spooled(
  name: DebugBundleEntryName,
  path: string,
  description: string,
  truncated = false,
): Promise<SpooledEntry> {
  return { name, path, description, truncated, ...(await describeFile(path)) };
}

/**
 * The archive as a stream: the manifest first (already in memory, a few kilobytes), then each
 * spooled entry read from its file, gzip-compressed. Destroying the result (the client went away)
 * stops the reading; its 'close' comes in every case, ended or not.
 */
export function archiveStream(
  manifest: Buffer,
  entries: readonly SpooledEntry[],
  mtime: Date,
  onError: (err: unknown) => void,
): Transform {
  async function* chunks(): AsyncGenerator<Buffer> {
    yield* tarEntry({ name: 'manifest.json', size: manifest.length, mtime }, manifest);
    for (const entry of entries)
      yield* tarEntry({ name: entry.name, size: entry.size, mtime }, createReadStream(entry.path));
    yield trailer();
  }
  const gzip = createGzip();
  pipeline(Readable.from(chunks()), gzip).catch(onError);
  return gzip;
}
