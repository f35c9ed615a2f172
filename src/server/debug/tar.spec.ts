import { execFileSync } from 'node:child_process';
import { createWriteStream, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { BLOCK, tarEntry, tarHeader, trailer } from './tar.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function* archive(files: [string, Buffer][], mtime: Date): AsyncGenerator<Buffer> {
  for (const [name, data] of files) {
    // Half of them as streams in small chunks, as spooled entries arrive.
    const body = name.endsWith('.txt') ? Readable.from(chunks(data, 100)) : data;
    yield* tarEntry({ name, size: data.length, mtime }, body);
  }
  yield trailer();
}

function* chunks(data: Buffer, size: number): Generator<Buffer> {
  for (let i = 0; i < data.length; i += size) yield data.subarray(i, i + size);
}

describe('tar writer', () => {
  it('writes archives the system tar lists and extracts byte for byte, gzip-compressed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'so-tar-'));
    dirs.push(dir);
    const files: [string, Buffer][] = [
      ['manifest.json', Buffer.from('{"a":1}\n')],
      ['empty.txt', Buffer.alloc(0)],
      ['logs/block.txt', Buffer.alloc(BLOCK, 'x')],
      ['logs/one-more.txt', Buffer.alloc(BLOCK + 1, 'y')],
      ['ünïcode.json', Buffer.from('"é"')],
      ['big.bin', Buffer.from(Array.from({ length: 70_000 }, (_, i) => (i * 7919) % 251))],
    ];
    const mtime = new Date('2026-11-24T02:39:00Z');
    const file = join(dir, 'a.tar.gz');
    await pipeline(Readable.from(archive(files, mtime)), createGzip(), createWriteStream(file));

    const listing = execFileSync('tar', ['-tvzf', file], {
      encoding: 'utf8',
      env: { ...process.env, TZ: 'UTC' },
    })
      .trim()
      .split('\n');
    expect(listing.map((l) => l.split(/\s+/).slice(5).join(' '))).toEqual(files.map(([n]) => n));
    expect(listing.map((l) => Number(l.split(/\s+/)[2]))).toEqual(files.map(([, d]) => d.length));
    expect(listing[0]).toMatch(/^-rw-r--r-- root\/root .* 2026-11-24 02:39 manifest\.json$/);

    const out = join(dir, 'out');
    execFileSync('mkdir', [out]);
    // --warning=all: a bad checksum or a missing end marker would be reported on stderr.
    execFileSync('tar', ['-xzf', file, '-C', out, '--warning=all'], { stdio: ['ignore', 'ignore', 'pipe'] });
    for (const [name, data] of files) expect(readFileSync(join(out, name)).equals(data), name).toBe(true);
  });

  it('fails an entry whose body does not have the size its header promised', async () => {
    const drain = async (gen: AsyncGenerator<Buffer>) => {
      for await (const chunk of gen) void chunk;
    };
    const mtime = new Date();
    await expect(
      drain(tarEntry({ name: 'a', size: 3, mtime }, Readable.from([Buffer.from('abcd')]))),
    ).rejects.toThrow(/4 bytes where the header says 3/);
    await expect(drain(tarEntry({ name: 'a', size: 5, mtime }, Buffer.from('abcd')))).rejects.toThrow(
      /4 bytes where the header says 5/,
    );
  });

  it('refuses names that are absolute, climb out, or do not fit the header', () => {
    const mtime = new Date();
    for (const name of ['', '/etc/passwd', '../x', 'a/../../x', 'n'.repeat(101)])
      expect(() => tarHeader({ name, size: 0, mtime }), name).toThrow(/name not allowed/);
    expect(() => tarHeader({ name: 'a', size: -1, mtime })).toThrow(/size/);
  });
});
