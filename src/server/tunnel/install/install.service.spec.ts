import { describe, expect, it } from 'vitest';
import { commandRegistryUrl, InstallUnavailableError } from './install.service.js';

describe('commandRegistryUrl', () => {
  it('keeps an http(s) URL, without its trailing slash', () => {
    expect(commandRegistryUrl('https://reg.example.test/')).toBe('https://reg.example.test');
    expect(commandRegistryUrl('http://127.0.0.1:5260')).toBe('http://127.0.0.1:5260');
    expect(commandRegistryUrl('https://x.test/prefix/')).toBe('https://x.test/prefix');
  });

  it.each([
    ['not a URL', 'reg.example.test'],
    ['another scheme', 'ftp://reg.example.test'],
    ['a javascript: URL', 'javascript:alert(1)'],
    ['credentials', 'https://user:pw@reg.example.test'],
    ['a query', 'https://reg.example.test/?a=$(b)'],
    ['a fragment', "https://reg.example.test/#'"],
  ])('refuses %s as a 503: the configuration is at fault, not the caller', (_case, url) => {
    expect(() => commandRegistryUrl(url)).toThrow(InstallUnavailableError);
    try {
      commandRegistryUrl(url);
    } catch (err) {
      expect(err).toMatchObject({ status: 503, code: 'install_unavailable' });
    }
  });

  it('leaves no line break for the quoting to refuse', () => {
    expect(commandRegistryUrl('https://reg.exam\nple.test/a\r\nb')).toBe('https://reg.example.test/ab');
  });
});
