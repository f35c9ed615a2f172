import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makePrivateDir, repairDataDir } from './private-files.js';

const modeOf = (path: string): number => statSync(path).mode & 0o7777;

describe('repairDataDir', () => {
  let root: string;
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'private-files-'));
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it("makes the directory 0700 and takes group and other bits off the program's entries, deep", () => {
    const dir = join(root, 'data');
    mkdirSync(join(dir, 'logs', 'old'), { recursive: true });
    writeFileSync(join(dir, 'logs', 'old', 'a.jsonl'), 'x');
    writeFileSync(join(dir, 'pgdata.lock'), '1');
    for (const [path, mode] of [
      [dir, 0o777],
      [join(dir, 'logs'), 0o2775],
      [join(dir, 'logs', 'old'), 0o755],
      [join(dir, 'logs', 'old', 'a.jsonl'), 0o666],
      [join(dir, 'pgdata.lock'), 0o644],
    ] as const)
      chmodSync(path, mode);

    expect(repairDataDir(dir, ['logs', 'pgdata.lock', 'secrets'])).toBe(4);
    expect(modeOf(dir)).toBe(0o700);
    expect(modeOf(join(dir, 'logs'))).toBe(0o700);
    expect(modeOf(join(dir, 'logs', 'old'))).toBe(0o700);
    expect(modeOf(join(dir, 'logs', 'old', 'a.jsonl'))).toBe(0o600);
    expect(modeOf(join(dir, 'pgdata.lock'))).toBe(0o600);
    // Nothing left to do the second time.
    expect(repairDataDir(dir, ['logs', 'pgdata.lock', 'secrets'])).toBe(0);
  });

  it('leaves what is not its own alone, and does not follow symbolic links out of the directory', () => {
    const dir = join(root, 'data');
    const outside = join(root, 'outside.txt');
    writeFileSync(outside, 'not ours');
    chmodSync(outside, 0o644);
    mkdirSync(join(dir, 'logs'), { recursive: true, mode: 0o700 });
    symlinkSync(outside, join(dir, 'logs', 'link'));
    writeFileSync(join(dir, 'notes.txt'), 'the operator put this here');
    chmodSync(join(dir, 'notes.txt'), 0o644);

    repairDataDir(dir, ['logs']);
    expect(modeOf(outside)).toBe(0o644);
    expect(modeOf(join(dir, 'notes.txt'))).toBe(0o644);
  });

  it('creates a missing directory and its parents 0700 whatever the umask', () => {
    const previous = process.umask(0);
    try {
      makePrivateDir(join(root, 'a', 'b'));
    } finally {
      process.umask(previous);
    }
    expect(modeOf(join(root, 'a'))).toBe(0o700);
    expect(modeOf(join(root, 'a', 'b'))).toBe(0o700);
  });
});
