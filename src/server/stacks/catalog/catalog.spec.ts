import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseCpu, parseDays, parseGi, parseMemory } from '../definition/quantities.js';
import { getCatalog, kitNames, loadCatalog, parseCatalog } from './catalog.js';

/** The catalogue file's shape, as far as these tests change it. */
interface RawCatalog {
  kits: Record<string, { variants: Record<string, { limits: Record<string, unknown> }> }>;
  monitoring: { services: { command: string[] }[] };
}

const raw = (): RawCatalog =>
  JSON.parse(readFileSync(new URL('./stackkits.json', import.meta.url), 'utf8')) as RawCatalog;

describe('stack-kit catalogue', () => {
  it('loads the bundled kits and variants with their limits in fixed units', () => {
    const catalog = loadCatalog();
    expect(kitNames(catalog)).toEqual(['basement-kit', 'cloud-kit', 'modern-homelab']);
    expect([...(catalog.kits.get('basement-kit')?.variants.keys() ?? [])]).toEqual(['default', 'minimal']);
    const minimal = catalog.kits.get('basement-kit')?.variants.get('minimal');
    expect(minimal?.limits).toEqual({
      max_services: 5,
      max_cpu_per_service: 1,
      max_memory_per_service_bytes: 2 ** 30,
      max_total_cpu: 2,
      max_total_memory_bytes: 2 * 2 ** 30,
      monitoring_allowed: false,
    });
    expect(minimal?.default_resources).toEqual({ cpu: 0.1, memory_bytes: 128 * 2 ** 20 });
    for (const kit of catalog.kits.values()) expect(kit.variants.has('default')).toBe(true);
    expect(getCatalog()).toBe(getCatalog());
  });

  it('holds one monitoring service per component, with placeholders for the file’s settings', () => {
    const { monitoring } = loadCatalog();
    expect(monitoring.defaults).toEqual({
      metrics_retention_days: 15,
      metrics_storage_gi: 10,
      log_retention_days: 7,
    });
    expect(monitoring.services.map((s) => [s.component, s.name])).toEqual([
      ['metrics_store', 'metrics-store'],
      ['log_store', 'log-store'],
      ['dashboard', 'dashboard'],
    ]);
    const metrics = monitoring.services[0];
    expect(metrics.command).toContain('--storage.tsdb.retention.time={{metrics_retention_days}}d');
    expect(monitoring.services[2].env.GF_SECURITY_ADMIN_PASSWORD).toBe('{{admin_password_ref}}');
  });

  it('refuses a catalogue of the wrong shape, naming the path', () => {
    const noDefault = raw();
    delete noDefault.kits['cloud-kit'].variants.default;
    noDefault.kits['cloud-kit'].variants.big = raw().kits['cloud-kit'].variants.default;
    expect(() => parseCatalog(noDefault)).toThrow('kits.cloud-kit.variants must include a "default" variant');

    const badMemory = raw();
    badMemory.kits['basement-kit'].variants.minimal.limits.max_total_memory = 'two gigs';
    expect(() => parseCatalog(badMemory)).toThrow(
      'kits.basement-kit.variants.minimal.limits.max_total_memory',
    );

    const badPlaceholder = raw();
    badPlaceholder.monitoring.services[0].command.push('--x={{password}}');
    expect(() => parseCatalog(badPlaceholder)).toThrow('unknown placeholder {{password}}');

    const noFlag = raw();
    delete noFlag.kits['cloud-kit'].variants.default.limits.monitoring_allowed;
    expect(() => parseCatalog(noFlag)).toThrow('monitoring_allowed must be a boolean');

    // More services than the agent channel is sized for (MAX_SERVICES_PER_STACK).
    const tooMany = raw();
    tooMany.kits['cloud-kit'].variants.default.limits.max_services = 101;
    expect(() => parseCatalog(tooMany)).toThrow(
      'kits.cloud-kit.variants.default.limits.max_services must be at most 100',
    );

    const missingComponent = raw();
    missingComponent.monitoring.services.pop();
    expect(() => parseCatalog(missingComponent)).toThrow('exactly one dashboard service');
  });
});

describe('quantities', () => {
  it('reads CPU as cores or millicores', () => {
    expect(parseCpu(2)).toBe(2);
    expect(parseCpu(0.5)).toBe(0.5);
    expect(parseCpu('250m')).toBe(0.25);
    expect(parseCpu('1.5')).toBe(1.5);
    for (const bad of [0, -1, '0m', '0.0001', 'two', '1 core', null, Infinity])
      expect(parseCpu(bad)).toBeUndefined();
  });

  it('reads memory as bytes or with binary and decimal units', () => {
    expect(parseMemory(1024)).toBe(1024);
    expect(parseMemory('256Mi')).toBe(256 * 2 ** 20);
    expect(parseMemory('1.5Gi')).toBe(1.5 * 2 ** 30);
    expect(parseMemory('500M')).toBe(500e6);
    expect(parseMemory('2k')).toBe(2000);
    for (const bad of [0, 1.5, -5, '1GB', '1 Gi', 'lots', '', '9999999999Ti'])
      expect(parseMemory(bad)).toBeUndefined();
  });

  it('reads retention days and Gi sizes only in their one form', () => {
    expect(parseDays('30d')).toBe(30);
    expect(parseGi('20Gi')).toBe(20);
    for (const bad of ['0d', '2w', '30', 30, '1.5d']) expect(parseDays(bad)).toBeUndefined();
    for (const bad of ['0Gi', '10GB', '10G', 10, '1.5Gi']) expect(parseGi(bad)).toBeUndefined();
  });
});
