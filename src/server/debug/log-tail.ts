/**
 * The logs part of the debug bundle: the lines of the last 24 hours from this replica's rotated
 * files (DATA_DIR/logs/service.N.jsonl, N growing with each rotation), the newest kept when they
 * are more than the cap, copied to a spool file byte for byte.
 */
import { once } from 'node:events';
import { createReadStream, createWriteStream } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { LogCuts, LogFileRead, LogTail } from '../../contracts/api/debug.js';
import { PRIVATE_FILE_MODE } from '../../contracts/private-files.js';

export type { LogTail };

const NEWLINE = 0x0a;
/** `time` is the second field pino writes; looking at the start of a line is enough. */
const TIME_FIELD = /"time":"([^"]{10,40})"/;

/** The record's time in ms, or undefined when the line has none. */
function lineTime(line: Buffer): number | undefined {
  const match = TIME_FIELD.exec(line.toString('latin1', 0, Math.min(line.length, 256)));
  if (!match) return undefined;
  const ms = Date.parse(match[1]);
  return Number.isNaN(ms) ? undefined : ms;
}

/**
 * The complete lines of the first `size` bytes of a file, each with its newline. A last line
 * without one is being written right now and is left out.
 */
async function* linesOf(path: string, size: number): AsyncGenerator<Buffer> {
  if (size === 0) return;
  let pending: Buffer[] = [];
  for await (const chunk of createReadStream(path, { start: 0, end: size - 1 }) as AsyncIterable<Buffer>) {
    let start = 0;
    for (let nl = chunk.indexOf(NEWLINE); nl !== -1; nl = chunk.indexOf(NEWLINE, start)) {
      const piece = chunk.subarray(start, nl + 1);
      yield pending.length === 0 ? piece : Buffer.concat([...pending, piece]);
      pending = [];
      start = nl + 1;
    }
    if (start < chunk.length) pending.push(chunk.subarray(start));
  }
}

interface Candidate extends LogFileRead {
  path: string;
  number: number;
  mtimeMs: number;
}

async function listFiles(dir: string, basename: string): Promise<Candidate[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  // pino-roll numbers the files before the extension: service.jsonl → service.1.jsonl, service.2.jsonl.
  const dot = basename.lastIndexOf('.');
  const stem = dot > 0 ? basename.slice(0, dot) : basename;
  const extension = dot > 0 ? basename.slice(dot) : '';
  const found: Candidate[] = [];
  for (const name of names) {
    if (!name.startsWith(`${stem}.`) || !name.endsWith(extension)) continue;
    const number = name.slice(stem.length + 1, name.length - extension.length);
    if (!/^\d{1,9}$/.test(number)) continue;
    const path = join(dir, name);
    try {
      const info = await stat(path);
      if (!info.isFile()) continue;
      found.push({
        name,
        path,
        number: Number(number),
        bytes: info.size,
        mtimeMs: info.mtimeMs,
        read: false,
      });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
  return found.sort((a, b) => a.number - b.number);
}

/**
 * Copies the lines written since `since` to `outPath`, at most `capBytes` of them: the newest whole
 * lines that fit. Two passes: the first, newest file first, counts what the window holds (and stops
 * reading older files once the cap is full); the second copies, skipping the oldest lines over the
 * cap. Memory stays at a chunk and a line, whatever the files hold.
 */
export async function collectLogTail(options: {
  dir: string;
  basename: string;
  since: Date;
  until: Date;
  capBytes: number;
  outPath: string;
}): Promise<LogTail> {
  const { since, capBytes } = options;
  const sinceMs = since.getTime();
  const files = await listFiles(options.dir, options.basename);
  const cut: LogCuts = {
    size_cap: { lines: 0, bytes: 0 },
    older_than_window: { lines: 0, bytes: 0 },
    files_older_than_window: { files: 0, bytes: 0 },
    files_beyond_cap: { files: 0, bytes: 0 },
    unparseable: { lines: 0, bytes: 0 },
    files_vanished: 0,
  };

  let windowBytes = 0;
  for (const file of [...files].reverse()) {
    if (file.mtimeMs < sinceMs) {
      cut.files_older_than_window.files++;
      cut.files_older_than_window.bytes += file.bytes;
      continue;
    }
    if (windowBytes >= capBytes) {
      cut.files_beyond_cap.files++;
      cut.files_beyond_cap.bytes += file.bytes;
      continue;
    }
    file.read = true;
    try {
      for await (const line of linesOf(file.path, file.bytes)) {
        const time = lineTime(line);
        if (time === undefined) {
          cut.unparseable.lines++;
          cut.unparseable.bytes += line.length;
        } else if (time < sinceMs) {
          cut.older_than_window.lines++;
          cut.older_than_window.bytes += line.length;
        } else {
          windowBytes += line.length;
        }
      }
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      file.read = false;
      cut.files_vanished++;
    }
  }

  const skip = Math.max(0, windowBytes - capBytes);
  let seen = 0;
  let lines = 0;
  let bytes = 0;
  let oldest: number | undefined;
  let newest: number | undefined;
  const out = createWriteStream(options.outPath, { mode: PRIVATE_FILE_MODE });
  const closed = once(out, 'close');
  try {
    for (const file of files.filter((f) => f.read)) {
      try {
        for await (const line of linesOf(file.path, file.bytes)) {
          const time = lineTime(line);
          if (time === undefined || time < sinceMs) continue;
          const before = seen;
          seen += line.length;
          if (before < skip) {
            cut.size_cap.lines++;
            cut.size_cap.bytes += line.length;
            continue;
          }
          oldest ??= time;
          newest = time;
          lines++;
          bytes += line.length;
          if (!out.write(line)) await once(out, 'drain');
        }
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
        file.read = false;
        cut.files_vanished++;
      }
    }
  } finally {
    out.end();
    await closed;
  }

  return {
    since: since.toISOString(),
    until: options.until.toISOString(),
    cap_bytes: capBytes,
    files: files.map(({ name, bytes: size, read }) => ({ name, bytes: size, read })),
    lines,
    bytes,
    oldest_line_time: oldest === undefined ? null : new Date(oldest).toISOString(),
    newest_line_time: newest === undefined ? null : new Date(newest).toISOString(),
    truncated: cut.size_cap.lines > 0 || cut.files_beyond_cap.files > 0,
    cut,
  };
}
