import { describe, expect, it } from 'vitest';
import { isProbeAddress } from './workers.service.js';

describe('isProbeAddress', () => {
  it.each(['127.0.0.1:5264', 'node-1.example.com:1', '[::1]:65535', '[fe80::1]:80'])('accepts %s', (a) => {
    expect(isProbeAddress(a)).toBe(true);
  });
  it.each(['x', 'h:99999', 'h:0', ':80', 'h:80/path', 'a b:80', `${'a'.repeat(300)}:80`, 'h:080'])(
    'refuses %j',
    (a) => {
      expect(isProbeAddress(a)).toBe(false);
    },
  );
});
