import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { tarArchive } from './tar-archive.js';

const dir = mkdtempSync(join(tmpdir(), 'tar-archive-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('tarArchive', () => {
  it('is read back by the system tar with paths, contents and modes, long paths included', () => {
    const long = `/etc/grafana/stack/dashboards/${'s'.repeat(63)}/${'d'.repeat(60)}.json`;
    const files = [
      {
        path: '/etc/prometheus/stack/prometheus.yml',
        content: 'global:\n  scrape_interval: 15s\n',
        mode: 0o644,
      },
      { path: '/etc/prometheus/stack/orchestrator-password', content: 'sos_grüß', mode: 0o444 },
      { path: '/empty', content: '', mode: 0o600 },
      { path: long, content: '{"x":1}\n'.repeat(100), mode: 0o640 },
    ];
    writeFileSync(join(dir, 'a.tar'), tarArchive(files));
    const out = join(dir, 'out');
    execFileSync('mkdir', ['-p', out]);
    execFileSync('tar', ['-xf', join(dir, 'a.tar'), '-C', out, '--no-same-owner']);
    for (const f of files) {
      expect(readFileSync(join(out, f.path), 'utf8')).toBe(f.content);
      expect(statSync(join(out, f.path)).mode & 0o777).toBe(f.mode);
    }
    expect(execFileSync('tar', ['-tvf', join(dir, 'a.tar')], { encoding: 'utf8' })).toMatch(/root\/root/);
  });
});
