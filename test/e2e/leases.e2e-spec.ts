import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Leases } from '../../src/server/common/leases.js';
import { startTestApp, type TestApp } from '../support/app.js';

// Two Leases on one database stand for two replicas: each has its own holder id.
describe('leases: one holder at a time across replicas', () => {
  let t: TestApp;
  let a: Leases;
  let b: Leases;
  beforeAll(async () => {
    t = await startTestApp();
    const dataSource = t.app.get(DataSource);
    a = new Leases(dataSource);
    b = new Leases(dataSource);
  });
  afterAll(() => t.close());

  it('the first taker holds it, renews it, and the other is refused', async () => {
    expect(a.holder).not.toBe(b.holder);
    expect(await a.acquire('test-one', 60_000)).toBe(true);
    expect(await b.acquire('test-one', 60_000)).toBe(false);
    expect(await a.acquire('test-one', 60_000)).toBe(true);
    expect(await a.holderOf('test-one')).toBe(a.holder);
    expect(await b.holderOf('test-one')).toBe(a.holder);
  });

  it('a released lease goes to the next taker at once', async () => {
    await a.release('test-one');
    expect(await a.holderOf('test-one')).toBeUndefined();
    expect(await b.acquire('test-one', 60_000)).toBe(true);
    expect(await a.acquire('test-one', 60_000)).toBe(false);
    // Releasing what another replica holds changes nothing.
    await a.release('test-one');
    expect(await a.holderOf('test-one')).toBe(b.holder);
  });

  it('an expired lease (its holder died) is taken over', async () => {
    expect(await a.acquire('test-two', 1)).toBe(true);
    await new Promise((r) => setTimeout(r, 20));
    expect(await a.holderOf('test-two')).toBeUndefined();
    expect(await b.acquire('test-two', 60_000)).toBe(true);
    expect(await a.acquire('test-two', 60_000)).toBe(false);
  });

  it('a marker: any replica renews it, its expiry only moves forward, and its age is the database’s', async () => {
    expect(await a.expiredFor('test-mark')).toBeUndefined();
    await a.mark('test-mark', 60_000);
    expect(await a.expiredFor('test-mark')).toBeLessThan(-50_000);
    // A shorter renewal by another replica leaves the later expiry; the holder is the last to mark.
    await b.mark('test-mark', 1);
    expect(await b.expiredFor('test-mark')).toBeLessThan(-50_000);
    expect(await a.holderOf('test-mark')).toBe(b.holder);
    await a.mark('test-short', 1);
    await new Promise((r) => setTimeout(r, 30));
    expect(await b.expiredFor('test-short')).toBeGreaterThan(0);
  });

  it('names are independent', async () => {
    expect(await a.acquire('test-three', 60_000)).toBe(true);
    expect(await b.acquire('test-four', 60_000)).toBe(true);
  });
});
