import { describe, expect, it } from 'vitest';
import { announcedProbePort, probeAddress, probeHost } from './probe-address.js';

describe('probeAddress', () => {
  it('uses the address recorded at enrollment when there is one', () => {
    expect(probeAddress('127.0.0.3', '127.0.0.1', 5264)).toBe('127.0.0.3:5264');
    expect(probeAddress('node-1.example.com', '127.0.0.1', 5264)).toBe('node-1.example.com:5264');
    expect(probeAddress('fd00::3', '127.0.0.1', 5264)).toBe('[fd00::3]:5264');
    expect(probeAddress('[fd00::3]', '127.0.0.1', 5264)).toBe('[fd00::3]:5264');
  });

  it('else the address the stream comes from', () => {
    expect(probeAddress('', '127.0.0.1', 5264)).toBe('127.0.0.1:5264');
    expect(probeAddress('', '::1', 80)).toBe('[::1]:80');
    // A recorded value that is no host (a port in it, a path, spaces) is not used.
    for (const bad of ['127.0.0.2:80', 'a b', 'h/x', '-h', 'x'.repeat(300)])
      expect(probeAddress(bad, '127.0.0.1', 5264), bad).toBe('127.0.0.1:5264');
  });

  it('is empty without a port or without any host', () => {
    expect(probeAddress('127.0.0.3', '127.0.0.1', 0)).toBe('');
    expect(probeAddress('', undefined, 5264)).toBe('');
  });
});

describe('announcedProbePort', () => {
  it('takes probe_port, else the port of probe_address and never its host', () => {
    expect(announcedProbePort({ probe_port: 5264, probe_address: '127.0.0.2:9' })).toBe(5264);
    expect(announcedProbePort({ probe_port: 0, probe_address: '127.0.0.2:9' })).toBe(9);
    expect(announcedProbePort({ probe_port: 0, probe_address: '[::1]:65535' })).toBe(65535);
  });

  it.each(['', 'x', 'h:0', 'h:080', 'h:99999', 'h:80/path'])('has none for %j', (address) => {
    expect(announcedProbePort({ probe_port: 0, probe_address: address })).toBe(0);
  });

  it('refuses a probe_port out of range', () => {
    expect(announcedProbePort({ probe_port: 70000, probe_address: '' })).toBe(0);
  });
});

describe('probeHost', () => {
  it.each(['127.0.0.1', 'node-1', 'node-1.example.com', '::1', '[fe80::1]'])('accepts %s', (h) => {
    expect(probeHost(h)).toBeDefined();
  });
  it.each(['', 'a b', 'h:80', 'h_1', '-h', 'h-', `${'a'.repeat(64)}.com`])('refuses %j', (h) => {
    expect(probeHost(h)).toBeUndefined();
  });
});
