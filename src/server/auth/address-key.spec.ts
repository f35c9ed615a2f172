import { describe, expect, it } from 'vitest';
import { addressKey } from './address-key.js';

describe('addressKey', () => {
  it('keeps IPv4 addresses whole, and unwraps IPv4-mapped IPv6', () => {
    expect(addressKey('203.0.113.7')).toBe('203.0.113.7');
    expect(addressKey('::ffff:203.0.113.7')).toBe('203.0.113.7');
    expect(addressKey('::FFFF:127.0.0.1')).toBe('127.0.0.1');
  });

  it('reduces IPv6 addresses to their /64, however they are written', () => {
    expect(addressKey('2001:db8:1:2:aaaa:bbbb:cccc:dddd')).toBe('2001:db8:1:2::/64');
    expect(addressKey('2001:0db8:0001:0002::1')).toBe('2001:db8:1:2::/64');
    expect(addressKey('2001:db8:1:2::ffff%eth0')).toBe('2001:db8:1:2::/64');
    expect(addressKey('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(addressKey('::1')).toBe('0:0:0:0::/64');
    expect(addressKey('2001:db8:1:3::1')).not.toBe(addressKey('2001:db8:1:2::1'));
  });

  it('passes anything else through unchanged', () => {
    expect(addressKey('not an address')).toBe('not an address');
  });
});
