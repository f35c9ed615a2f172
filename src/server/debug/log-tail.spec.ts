import { mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { collectLogTail } from './log-tail.js';

const HOUR = 3_600_000;
const now = new Date('2026-11-24T02:39:00.000Z');
const since = new Date(now.getTime() - 24 * HOUR);

/** A record as the service's logger writes it. */
const record = (at: number, msg: string): string =>
  `${JSON.stringify({ level: 'INFO', time: new Date(at).toISOString(), pid: 1, msg })}\n`;

describe('collectLogTail', () => {
  let dir: string;
  let out: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'so-logs-'));
    out = join(dir, 'out.jsonl');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const write = (name: string, lines: string[], mtime = now): void => {
    writeFileSync(join(dir, name), lines.join(''));
    utimesSync(join(dir, name), mtime, mtime);
  };
  const collect = (capBytes: number) =>
    collectLogTail({ dir, basename: 'service.jsonl', since, until: now, capBytes, outPath: out });

  it('keeps the lines of the last 24 hours in file order, and counts what it left out', async () => {
    const old = record(now.getTime() - 30 * HOUR, 'too old');
    const a = record(now.getTime() - 23 * HOUR, 'a');
    const b = record(now.getTime() - 2 * HOUR, 'b');
    const c = record(now.getTime() - 1000, 'c');
    write(
      'service.9.jsonl',
      [record(now.getTime() - 48 * HOUR, 'old file')],
      new Date(now.getTime() - 47 * HOUR),
    );
    write('service.10.jsonl', [old, a, 'not json at all\n']);
    // The current file: its last line is still being written.
    write('service.11.jsonl', [b, c, '{"level":"INFO","time":"2026-11-24T02:38']);
    for (const name of ['other.log', 'service.jsonl', 'service.x.jsonl', 'service.12.log'])
      write(name, [record(now.getTime(), 'not ours')]);

    const tail = await collect(1_000_000);
    expect(readFileSync(out, 'utf8')).toBe(a + b + c);
    expect(tail).toMatchObject({
      lines: 3,
      bytes: Buffer.byteLength(a + b + c),
      truncated: false,
      oldest_line_time: new Date(now.getTime() - 23 * HOUR).toISOString(),
      newest_line_time: new Date(now.getTime() - 1000).toISOString(),
      since: since.toISOString(),
      until: now.toISOString(),
    });
    expect(tail.files.map((f) => [f.name, f.read])).toEqual([
      ['service.9.jsonl', false],
      ['service.10.jsonl', true],
      ['service.11.jsonl', true],
    ]);
    expect(tail.cut.older_than_window).toEqual({ lines: 1, bytes: Buffer.byteLength(old) });
    expect(tail.cut.files_older_than_window.files).toBe(1);
    expect(tail.cut.unparseable.lines).toBe(1);
    expect(tail.cut.size_cap).toEqual({ lines: 0, bytes: 0 });
  });

  it('over the cap keeps the newest whole lines that fit, and skips files older than them', async () => {
    const lines = Array.from({ length: 30 }, (_, i) =>
      record(now.getTime() - (30 - i) * 60_000, `line ${String(i).padStart(2, '0')}`),
    );
    write('service.1.jsonl', lines.slice(0, 10));
    write('service.2.jsonl', lines.slice(10, 20));
    write('service.3.jsonl', lines.slice(20));
    const size = Buffer.byteLength(lines[0]);
    // Room for 12.5 lines: 12 whole ones, the newest.
    const tail = await collect(Math.floor(size * 12.5));
    expect(readFileSync(out, 'utf8')).toBe(lines.slice(18).join(''));
    expect(tail.lines).toBe(12);
    expect(tail.truncated).toBe(true);
    expect(tail.cut.size_cap).toEqual({ lines: 8, bytes: 8 * size });
    // The newest two files already hold more than the cap: the oldest one is not read.
    expect(tail.cut.files_beyond_cap).toEqual({ files: 1, bytes: 10 * size });
    expect(tail.files.find((f) => f.name === 'service.1.jsonl')?.read).toBe(false);
  });

  it('a line larger than the cap is left out rather than cut', async () => {
    write('service.1.jsonl', [record(now.getTime() - 1000, 'x'.repeat(500))]);
    const tail = await collect(100);
    expect(readFileSync(out, 'utf8')).toBe('');
    expect(tail.lines).toBe(0);
    expect(tail.cut.size_cap.lines).toBe(1);
  });

  it('an empty or missing log directory gives an empty part', async () => {
    const tail = await collectLogTail({
      dir: join(dir, 'missing'),
      basename: 'service.jsonl',
      since,
      until: now,
      capBytes: 10,
      outPath: out,
    });
    expect(tail).toMatchObject({ lines: 0, bytes: 0, files: [], truncated: false });
    expect(readFileSync(out, 'utf8')).toBe('');
  });
});
