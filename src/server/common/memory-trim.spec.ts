import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadNativeTrim } from './memory-trim.js';

const BUILD = fileURLToPath(new URL('../../../scripts/build-native.mjs', import.meta.url));

// The addon is built here with the build's own script (`--require`: a machine without a C compiler
// fails this test rather than passing it), into a directory of the test's.
describe('native malloc_trim addon', () => {
  let dir: string;
  let addonPath: string;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'so-native-'));
    execFileSync(process.execPath, [BUILD, '--require', '--out', dir], { stdio: 'pipe' });
    addonPath = join(dir, 'malloc-trim.node');
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('loads, on glibc', () => {
    const addon = loadNativeTrim(pathToFileURL(addonPath));
    expect('unavailable' in addon).toBe(false);
  });

  it('says why when the addon is missing', () => {
    const addon = loadNativeTrim(pathToFileURL(join(dir, 'absent.node')));
    expect(addon).toEqual({ unavailable: expect.stringMatching(/^the addon did not load/) });
  });

  it("gives memory freed into malloc's heap back to the system", () => {
    // 128 MiB of 64 KiB Buffers (malloc'd, under the mmap threshold), all freed but the last, which
    // holds the heap's top so that free() alone cannot shrink it: RSS drops only with a trim.
    const script = `
      const { readFileSync } = require('node:fs');
      const addon = require(${JSON.stringify(addonPath)});
      const rssMiB = () => Number(/^VmRSS:\\s+(\\d+)/m.exec(readFileSync('/proc/self/status', 'utf8'))[1]) / 1024;
      let held = [];
      for (let i = 0; i < 2048; i++) held.push(Buffer.alloc(64 * 1024, 1));
      globalThis.pin = Buffer.alloc(64 * 1024, 1);
      held = null;
      gc(); gc();
      setTimeout(async () => {
        gc();
        const before = rssMiB();
        const released = await addon.trim();
        const after = rssMiB();
        console.log(JSON.stringify({ before, after, released }));
      }, 300);
    `;
    const out = execFileSync(process.execPath, ['--expose-gc', '-e', script], { encoding: 'utf8' });
    const { before, after, released } = JSON.parse(out) as {
      before: number;
      after: number;
      released: boolean;
    };
    expect(released).toBe(true);
    expect(before - after).toBeGreaterThanOrEqual(64);
  });
});
