import { mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AppConfig } from '../config/config.js';
import { SecretBox } from './secret-box.js';
import { DUMMY_SECRET_HASH, hashSecret, randomToken, tokenDigest, verifySecret } from './secrets.js';

describe('secret hashing', () => {
  it('salts: the same secret hashes differently, and both verify', async () => {
    const [a, b] = await Promise.all([hashSecret('correct horse'), hashSecret('correct horse')]);
    expect(a).not.toBe(b);
    expect(a).toMatch(/^scrypt\$16384\$8\$1\$/);
    expect(await verifySecret('correct horse', a)).toBe(true);
    expect(await verifySecret('correct horse', b)).toBe(true);
    expect(await verifySecret('wrong horse', a)).toBe(false);
  });

  it('rejects malformed hashes and the dummy hash', async () => {
    expect(await verifySecret('x', 'plain')).toBe(false);
    expect(await verifySecret('x', 'bcrypt$1$2$3$a$b')).toBe(false);
    expect(await verifySecret('', DUMMY_SECRET_HASH)).toBe(false);
  });

  it('makes prefixed random tokens and stable digests', () => {
    const t = randomToken('rt_', 32);
    expect(t).toMatch(/^rt_[A-Za-z0-9_-]{43}$/);
    expect(randomToken('rt_')).not.toBe(t);
    expect(tokenDigest(t)).toBe(tokenDigest(t));
    expect(tokenDigest(t)).not.toContain(t.slice(3));
  });
});

describe('SecretBox', () => {
  const box = (env: Record<string, string>) => new SecretBox(new AppConfig(env));

  it('round-trips, binds the context and needs the same key', () => {
    const dir = mkdtempSync(join(tmpdir(), 'so-box-'));
    const a = box({ DATA_DIR: dir });
    const sealed = a.encrypt('private key material', 'signing-key:k1');
    expect(sealed).not.toContain('private key material');
    expect(a.decrypt(sealed, 'signing-key:k1')).toBe('private key material');
    expect(() => a.decrypt(sealed, 'signing-key:k2')).toThrow();
    // A second box on the same DATA_DIR reads the same generated key file (mode 0600).
    expect(box({ DATA_DIR: dir }).decrypt(sealed, 'signing-key:k1')).toBe('private key material');
    expect(statSync(join(dir, 'secrets', 'master.key')).mode & 0o777).toBe(0o600);
    expect(() =>
      box({ DATA_DIR: mkdtempSync(join(tmpdir(), 'so-box-')) }).decrypt(sealed, 'signing-key:k1'),
    ).toThrow();
  });

  it('uses ENCRYPTION_KEY when given, the same on every replica', () => {
    const key = 'a-long-operator-chosen-encryption-key-0123456789';
    const sealed = box({ DATA_DIR: mkdtempSync(join(tmpdir(), 'so-box-')), ENCRYPTION_KEY: key }).encrypt(
      's',
      'c',
    );
    expect(
      box({ DATA_DIR: mkdtempSync(join(tmpdir(), 'so-box-')), ENCRYPTION_KEY: key }).decrypt(sealed, 'c'),
    ).toBe('s');
    expect(() =>
      box({ DATA_DIR: mkdtempSync(join(tmpdir(), 'so-box-')), ENCRYPTION_KEY: `${key}x` }).decrypt(
        sealed,
        'c',
      ),
    ).toThrow();
  });
});
