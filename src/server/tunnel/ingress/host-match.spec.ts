import { describe, expect, it } from 'vitest';
import { matchIngressHost } from './host-match.js';

const BASE = 'tunnel.example.com';

describe('matchIngressHost', () => {
  it.each([
    ['web-shop.b1.tunnel.example.com', 'web-shop.b1.tunnel.example.com'],
    ['Web-Shop.B1.Tunnel.Example.COM', 'web-shop.b1.tunnel.example.com'],
    ['web-shop.b1.tunnel.example.com:443', 'web-shop.b1.tunnel.example.com'],
    ['web-shop.b1.tunnel.example.com.', 'web-shop.b1.tunnel.example.com'],
    ['web-shop.b1.tunnel.example.com.:8080', 'web-shop.b1.tunnel.example.com'],
    ['a.b.c.tunnel.example.com', 'a.b.c.tunnel.example.com'],
    ['xn--bcher-kva.b1.tunnel.example.com', 'xn--bcher-kva.b1.tunnel.example.com'],
  ])('matches %s as %s', (header, expected) => {
    expect(matchIngressHost(header, BASE)).toBe(expected);
  });

  it('normalizes the base domain the same way', () => {
    expect(matchIngressHost('web-shop.b1.tunnel.example.com', 'Tunnel.Example.com.')).toBe(
      'web-shop.b1.tunnel.example.com',
    );
  });

  it.each([
    ['the base domain itself', 'tunnel.example.com'],
    ['the base domain with a port', 'tunnel.example.com:5260'],
    ['a base subdomain alone', 'b1.tunnel.example.com'],
    ['another domain', 'web.b1.example.org'],
    ['a name that only ends like the base', 'web.b1.eviltunnel.example.com'],
    ['the base domain as a prefix', 'web.b1.tunnel.example.com.evil.com'],
    ['a fragment trick', 'evil.com#.b1.tunnel.example.com'],
    ['userinfo', 'user@web.b1.tunnel.example.com'],
    ['a path', 'web.b1.tunnel.example.com/x'],
    ['a bracketed IPv6 literal', '[::1]'],
    ['a bracketed IPv6 literal with a port', '[::1]:443'],
    ['a bare IPv6 literal', '::1'],
    ['an IPv4 literal', '127.0.0.1'],
    ['a non-numeric port', 'web.b1.tunnel.example.com:https'],
    ['an empty port', 'web.b1.tunnel.example.com:'],
    ['a long port', 'web.b1.tunnel.example.com:123456'],
    ['two ports', 'web.b1.tunnel.example.com:80:80'],
    ['an empty label', 'web..b1.tunnel.example.com'],
    ['a leading dot', '.web.b1.tunnel.example.com'],
    ['two trailing dots', 'web.b1.tunnel.example.com..'],
    ['a label starting with a hyphen', '-web.b1.tunnel.example.com'],
    ['a label ending with a hyphen', 'web-.b1.tunnel.example.com'],
    ['an underscore', 'web_shop.b1.tunnel.example.com'],
    ['a space', 'web shop.b1.tunnel.example.com'],
    ['a wildcard', '*.b1.tunnel.example.com'],
    ['non-ASCII letters', 'wéb.b1.tunnel.example.com'],
    ['a Kelvin sign that lower-cases to k', 'wor\u212A.b1.tunnel.example.com'],
    ['latin1 bytes of UTF-8', 'w\u00c3\u00a9b.b1.tunnel.example.com'],
    ['a NUL byte', 'web\u0000.b1.tunnel.example.com'],
    ['a 64-character label', `${'a'.repeat(64)}.b1.tunnel.example.com`],
    ['a name over 253 characters', `${'a.'.repeat(120)}b1.tunnel.example.com`],
    ['a very long header', `${'a'.repeat(100_000)}.b1.tunnel.example.com`],
    ['an empty header', ''],
    ['a lone dot', '.'],
    ['a lone colon', ':'],
  ])('does not match %s', (_what, header) => {
    expect(matchIngressHost(header, BASE)).toBeUndefined();
  });

  it('accepts a 63-character label and a name of 253 characters', () => {
    const label = 'a'.repeat(63);
    expect(matchIngressHost(`${label}.b1.${BASE}`, BASE)).toBe(`${label}.b1.${BASE}`);
    const suffix = `.b1.${BASE}`;
    const long = [label, label, label, 'a'.repeat(253 - 3 * 64 - suffix.length)].join('.') + suffix;
    expect(long.length).toBe(253);
    expect(matchIngressHost(long, BASE)).toBe(long);
    expect(matchIngressHost(`a${long}`, BASE)).toBeUndefined();
  });

  it('matches nothing without a Host header or a base domain', () => {
    expect(matchIngressHost(undefined, BASE)).toBeUndefined();
    expect(matchIngressHost('web.b1.tunnel.example.com', undefined)).toBeUndefined();
    expect(matchIngressHost('web.b1.tunnel.example.com', '')).toBeUndefined();
  });

  it('matches nothing when the base domain itself is malformed', () => {
    expect(matchIngressHost('web.b1.evil.com#', 'evil.com#')).toBeUndefined();
    expect(matchIngressHost('a.b.', '.')).toBeUndefined();
  });
});
