import { describe, expect, it } from 'vitest';
import { checkUrlRules, hopRefusal, hostOf, MAX_URL_LENGTH, URL_RULE_NAMES } from './url-rules.js';

const failed = (input: unknown) =>
  checkUrlRules(input)
    .checks.filter((c) => !c.ok && !c.detail.startsWith('skipped'))
    .map((c) => c.name);
const check = (input: unknown, name: string) => checkUrlRules(input).checks.find((c) => c.name === name);

describe('checkUrlRules', () => {
  it('passes an ordinary https URL and normalizes it', () => {
    const result = checkUrlRules('HTTPS://Tunnel.Example.COM:443/base/');
    expect(result.checks.map((c) => c.name)).toEqual([...URL_RULE_NAMES]);
    expect(result.checks.every((c) => c.ok)).toBe(true);
    expect(result.url?.href).toBe('https://tunnel.example.com/base/');
    expect(result.href).toBe('https://tunnel.example.com/base/');
    expect(check('https://tunnel.example.com/', 'port')?.detail).toBe('default port 443');
    expect(check('http://tunnel.example.com:8080/', 'port')?.detail).toBe('port 8080');
  });

  it('refuses a missing, empty or non-string URL, skipping the rest', () => {
    for (const input of [undefined, null, '', 42, {}, ['http://x/'], true]) {
      const result = checkUrlRules(input);
      expect(result.url).toBeNull();
      expect(result.href).toBeNull();
      expect(result.checks[0]).toMatchObject({ name: 'present', ok: false });
      expect(
        result.checks.slice(1).every((c) => !c.ok && c.detail === 'skipped: the present check failed'),
      ).toBe(true);
    }
    expect(check(42, 'present')?.detail).toBe('the URL must be a string, not a number');
    expect(check(undefined, 'present')?.detail).toBe('no URL was given');
  });

  it('refuses a URL over 2 KiB without parsing it', () => {
    const long = `https://example.com/${'a'.repeat(MAX_URL_LENGTH)}`;
    expect(failed(long)).toEqual(['length']);
    expect(failed('x'.repeat(10_000_000))).toEqual(['length']);
    expect(failed(`https://example.com/${'a'.repeat(MAX_URL_LENGTH - 20)}`)).toEqual([]);
  });

  it('refuses whitespace and control characters the parser would silently drop', () => {
    for (const input of [
      'http://exa\nmple.com/',
      ' http://example.com/',
      'http://example.com/\t',
      'http://a\u0000b/',
      'http://a\u007f/',
      'http://a\u0085/',
    ]) {
      expect(failed(input), JSON.stringify(input)).toEqual(['syntax']);
    }
  });

  it('refuses what is not an absolute URL', () => {
    for (const input of [
      'example.com',
      '/relative',
      'http://',
      'http://x:65536/',
      'http://[::1/',
      'http://1.2.3.4.5/',
      '://x',
    ]) {
      expect(failed(input), input).toEqual(['syntax']);
    }
  });

  it('allows http and https only', () => {
    for (const input of [
      'ftp://example.com/',
      'file:///etc/passwd',
      'javascript:alert(1)',
      'gopher://example.com/',
      'ws://example.com/',
      'data:text/plain,x',
    ]) {
      expect(failed(input), input).toContain('scheme');
    }
    expect(check('gopher://example.com/', 'scheme')?.detail).toBe(
      'scheme gopher: is not allowed: http or https only',
    );
  });

  it('refuses credentials in the URL', () => {
    expect(failed('https://user@example.com/')).toEqual(['credentials']);
    expect(failed('https://user:pw@example.com/')).toEqual(['credentials']);
    expect(failed('https://:pw@example.com/')).toEqual(['credentials']);
    // An empty user-info section is dropped by the parser and carries nothing.
    expect(failed('https://@example.com/')).toEqual([]);
  });

  it('refuses port 0, a query string and a fragment, even empty ones', () => {
    expect(failed('http://example.com:0/')).toEqual(['port']);
    expect(failed('http://example.com/?a=1')).toEqual(['query']);
    expect(failed('http://example.com/?')).toEqual(['query']);
    expect(failed('http://example.com/#top')).toEqual(['fragment']);
    expect(failed('http://example.com/#')).toEqual(['fragment']);
    expect(failed('http://example.com/?#')).toEqual(['query', 'fragment']);
  });

  it('refuses a host name longer than DNS allows', () => {
    const label = 'a'.repeat(60);
    expect(failed(`http://${[label, label, label, label, label].join('.')}/`)).toEqual(['host']);
  });

  it('checks the host as the URL parser normalizes it: numeric IPv4 forms, mapped IPv6, IDN', () => {
    const hostOfInput = (input: string) => {
      const url = checkUrlRules(input).url;
      return url === null ? null : hostOf(url);
    };
    expect(hostOfInput('http://2130706433/')).toBe('127.0.0.1');
    expect(hostOfInput('http://0x7f.1/')).toBe('127.0.0.1');
    expect(hostOfInput('http://0177.0.0.1/')).toBe('127.0.0.1');
    expect(hostOfInput('http://%31%32%37.0.0.1/')).toBe('127.0.0.1');
    expect(hostOfInput('http://[::ffff:127.0.0.1]/')).toBe('::ffff:7f00:1');
    expect(hostOfInput('http://[0:0:0:0:0:0:0:1]:8080/')).toBe('::1');
    expect(hostOfInput('http://exämple.com/')).toBe('xn--exmple-cua.com');
    expect(hostOfInput('http://ｅｘａｍｐｌｅ.com/')).toBe('example.com');
  });

  it('never throws and echoes no raw control characters, whatever the input', () => {
    const hostile = [
      'http://\u202e.com/',
      'http://a\ud800b/',
      'http://xn--/',
      'http://%zz/',
      'http://[::ffff:999.0.0.1]/',
      `http://${'%'.repeat(2000)}/`,
      'https://ex\u200bample.com/',
      Symbol('x'),
      () => 'http://x/',
      BigInt(1),
      new Proxy({}, {}),
    ];
    for (const input of hostile) {
      const result = checkUrlRules(input);
      expect(result.checks.map((c) => c.name)).toEqual([...URL_RULE_NAMES]);
      for (const c of result.checks) expect(c.detail).toMatch(/^[\x20-\x7e]+$/);
    }
  });
});

describe('hopRefusal', () => {
  it('applies the scheme, credentials, host and port rules to a redirect target, not the query rule', () => {
    expect(hopRefusal(new URL('https://example.com/.well-known/x?a=1#b'))).toBeNull();
    expect(hopRefusal(new URL('file:///etc/passwd'))).toBe('scheme file: is not allowed: http or https only');
    expect(hopRefusal(new URL('http://u:p@example.com/'))).toMatch(/credentials/);
    expect(hopRefusal(new URL('http://example.com:0/'))).toBe('port 0 is not a usable port');
    expect(hopRefusal(new URL(`http://example.com/${'a'.repeat(MAX_URL_LENGTH)}`))).toMatch(/over 2048/);
  });
});
