import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { field, parseCloudflaredLine } from './cloudflared-output.js';
import { cloudflaredEnvironment, findExecutable } from './cloudflared-provider.js';

const T = '2024-09-02T10:15:31Z';

describe('parseCloudflaredLine', () => {
  it('reads a quick tunnel session: the URL from its box, then the registered connection', () => {
    const transcript = [
      `${T} INF Requesting new quick Tunnel on trycloudflare.com...`,
      `${T} INF +--------------------------------------------------------------------------------------------+`,
      `${T} INF |  Your quick Tunnel has been created! Visit it at (it may take some time to be reachable):  |`,
      `${T} INF |  https://seasonal-deck-organisms-sf.trycloudflare.com                                      |`,
      `${T} INF +--------------------------------------------------------------------------------------------+`,
      `${T} INF Version 2024.8.2 (Checksum 0f3c)`,
      `${T} INF Starting metrics server on 127.0.0.1:20241/metrics`,
      `${T} INF Registered tunnel connection connIndex=0 connection=5a7c1f0e-0000-4000-8000-000000000000 event=0 ip=198.41.192.107 location=ams08 protocol=quic`,
    ];
    expect(transcript.map(parseCloudflaredLine).filter(Boolean)).toEqual([
      { kind: 'url', url: 'https://seasonal-deck-organisms-sf.trycloudflare.com' },
      { kind: 'registered', connIndex: 0 },
    ]);
  });

  it('reads a lost connection with its error, and a graceful unregistration without one', () => {
    expect(
      parseCloudflaredLine(
        `${T} ERR Connection terminated error="timeout: no recent network activity" connIndex=2`,
      ),
    ).toEqual({ kind: 'lost', connIndex: 2, error: 'timeout: no recent network activity' });
    expect(
      parseCloudflaredLine(`${T} INF Unregistered tunnel connection connIndex=1 event=0 ip=198.41.200.13`),
    ).toEqual({ kind: 'lost', connIndex: 1 });
  });

  it('keeps error lines and unstructured last words as reasons', () => {
    expect(parseCloudflaredLine(`${T} ERR Serve tunnel error error="context canceled" connIndex=0`)).toEqual({
      kind: 'error',
      message: 'Serve tunnel error error="context canceled" connIndex=0',
    });
    const failed =
      'failed to request quick Tunnel: Post "https://api.trycloudflare.com/tunnel": dial tcp: i/o timeout';
    // The API's name in an error is no tunnel URL.
    expect(parseCloudflaredLine(failed)).toEqual({ kind: 'error', message: failed });
    expect(parseCloudflaredLine(`${T} ERR ${failed}`)).toEqual({ kind: 'error', message: failed });
  });

  it('ignores information lines, blank lines and colours, and clips long reasons', () => {
    expect(parseCloudflaredLine(`${T} INF Retrying connection in up to 1s connIndex=0`)).toBeUndefined();
    expect(parseCloudflaredLine('   ')).toBeUndefined();
    expect(
      parseCloudflaredLine(
        `\x1b[90m${T}\x1b[0m \x1b[32mINF\x1b[0m Registered tunnel connection \x1b[36mconnIndex=\x1b[0m3`,
      ),
    ).toEqual({ kind: 'registered', connIndex: 3 });
    const long = parseCloudflaredLine(`${T} ERR ${'x'.repeat(1000)}`);
    expect(long).toEqual({ kind: 'error', message: `${'x'.repeat(300)}...` });
  });

  it('reads quoted field values with escapes', () => {
    expect(field('Connection terminated error="say \\"hi\\"" connIndex=0', 'error')).toBe('say "hi"');
    expect(field('a connIndex=7 b', 'connIndex')).toBe('7');
    expect(field('a xconnIndex=7', 'connIndex')).toBeUndefined();
  });
});

describe('cloudflaredEnvironment', () => {
  it('passes the basics and the token, and none of this process’s secrets or TUNNEL_* settings', () => {
    const env = cloudflaredEnvironment(
      {
        PATH: '/usr/bin',
        HOME: '/home/so',
        HTTPS_PROXY: 'http://proxy.test:3128',
        DATABASE_URL: 'postgres://u:p@db/so',
        BOOTSTRAP_CLIENT_SECRET: 's3cret',
        TUNNEL_CLOUDFLARED_TOKEN: 'the-token',
        TUNNEL_SSH_KEY_FILE: '/keys/id',
        TUNNEL_URL: 'http://elsewhere.test',
      },
      'the-token',
    );
    expect(env).toEqual({
      PATH: '/usr/bin',
      HOME: '/home/so',
      HTTPS_PROXY: 'http://proxy.test:3128',
      TUNNEL_TOKEN: 'the-token',
    });
    expect(cloudflaredEnvironment({ PATH: '/bin', TUNNEL_TOKEN: 'inherited' })).toEqual({ PATH: '/bin' });
  });
});

describe('findExecutable', () => {
  const dir = mkdtempSync(join(tmpdir(), 'so-find-exec-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const bin = join(dir, 'bin');
  const other = join(dir, 'other');
  mkdirSync(bin);
  mkdirSync(other);
  mkdirSync(join(other, 'cloudflared'));
  writeFileSync(join(bin, 'cloudflared'), '#!/bin/sh\n');
  chmodSync(join(bin, 'cloudflared'), 0o755);
  writeFileSync(join(bin, 'plain'), 'not executable\n');
  chmodSync(join(bin, 'plain'), 0o644);

  it('finds the first executable file on the search path, skipping directories and relative entries', () => {
    expect(findExecutable('cloudflared', `bin:${other}:${bin}`)).toBe(join(bin, 'cloudflared'));
    expect(findExecutable('cloudflared', other)).toBeUndefined();
    expect(findExecutable('cloudflared', '')).toBeUndefined();
  });

  it('takes a path as it is', () => {
    expect(findExecutable(join(bin, 'cloudflared'), '')).toBe(join(bin, 'cloudflared'));
    expect(findExecutable(join(bin, 'absent'), bin)).toBeUndefined();
  });

  it('skips a file that is not executable (even for root, which needs one x bit)', () => {
    expect(findExecutable('plain', bin)).toBeUndefined();
  });
});
