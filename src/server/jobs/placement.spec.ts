import { describe, expect, it } from 'vitest';
import { place, rejection, type PlacementCandidate, type PlacementRequest } from './placement.js';

const GiB = 1024 ** 3;

const worker = (id: string, over: Partial<PlacementCandidate> = {}): PlacementCandidate => ({
  id,
  status: 'healthy',
  connected: true,
  driver: 'process',
  labels: {},
  capacity: { cpu: 4, memory_bytes: 8 * GiB },
  reserved: { cpu: 0, memory_bytes: 0 },
  ...over,
});

const request = (over: Partial<PlacementRequest> = {}): PlacementRequest => ({
  drivers: ['process'],
  labels: {},
  cpu: 1,
  memory_bytes: GiB,
  current: null,
  ...over,
});

describe('placement', () => {
  it('refuses workers that are not connected or not reporting', () => {
    expect(rejection(worker('a', { connected: false }), request())).toBe('not connected');
    expect(rejection(worker('a', { status: 'unhealthy' }), request())).toBe('status unhealthy');
    expect(rejection(worker('a', { status: 'unreachable' }), request())).toBe('status unreachable');
    expect(rejection(worker('a', { status: 'degraded' }), request())).toBeNull();
  });

  it('needs the driver every service uses', () => {
    expect(rejection(worker('a', { driver: 'docker' }), request())).toBe('driver docker, needs process');
    expect(rejection(worker('a'), request({ drivers: ['docker', 'process'] }))).toMatch(
      /drivers docker and process/,
    );
  });

  it('needs every label', () => {
    const w = worker('a', { labels: { zone: 'eu', disk: 'ssd' } });
    expect(rejection(w, request({ labels: { zone: 'eu' } }))).toBeNull();
    expect(rejection(w, request({ labels: { zone: 'us' } }))).toBe('label zone=us missing');
    expect(rejection(w, request({ labels: { gpu: 'yes' } }))).toBe('label gpu=yes missing');
  });

  it('needs free CPU and memory after what is reserved', () => {
    const w = worker('a', { reserved: { cpu: 3.5, memory_bytes: 7 * GiB } });
    expect(rejection(w, request({ cpu: 0.5, memory_bytes: GiB }))).toBeNull();
    expect(rejection(w, request({ cpu: 1 }))).toBe('needs 1 CPU, 0.5 free');
    expect(rejection(w, request({ cpu: 0.1, memory_bytes: 2 * GiB }))).toMatch(/memory/);
  });

  it('spreads: the worker with the largest free memory share wins, ties by CPU then id', () => {
    const busy = worker('a', { reserved: { cpu: 1, memory_bytes: 6 * GiB } });
    const idle = worker('b');
    expect(place([busy, idle], request())).toEqual({ ok: true, workerId: 'b' });
    const lessCpu = worker('c', { reserved: { cpu: 2, memory_bytes: 0 } });
    expect(place([lessCpu, idle], request())).toEqual({ ok: true, workerId: 'b' });
    expect(place([worker('z'), worker('y')], request())).toEqual({ ok: true, workerId: 'y' });
  });

  it('keeps the stack on its current worker while it fits', () => {
    const current = worker('a', { reserved: { cpu: 2, memory_bytes: 6 * GiB } });
    expect(place([current, worker('b')], request({ current: 'a' }))).toEqual({ ok: true, workerId: 'a' });
    expect(place([worker('a', { connected: false }), worker('b')], request({ current: 'a' }))).toEqual({
      ok: true,
      workerId: 'b',
    });
  });

  it('explains why nothing fits', () => {
    const result = place(
      [worker('a', { driver: 'docker' }), worker('b', { status: 'unhealthy' })],
      request(),
    );
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.rejections).toEqual({ a: 'driver docker, needs process', b: 'status unhealthy' });
    expect(result.reason).toContain('no worker fits');
    expect(place([], request())).toMatchObject({ ok: false, reason: 'no worker is connected' });
  });
});
