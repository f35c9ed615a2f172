import { Injectable } from '@nestjs/common';
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes, scryptSync } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AppConfig } from '../config/config.js';

const VERSION = 'v1';

/**
 * Encrypts secrets the service must keep at rest (signing keys, the agent CA key) with AES-256-GCM
 * under the master key: ENCRYPTION_KEY when set, else a random key kept in
 * DATA_DIR/secrets/master.key (mode 0600). `context` is bound as associated data, so a ciphertext
 * cannot be moved to another record.
 */
@Injectable()
export class SecretBox {
  private readonly key: Buffer;

  constructor(config: AppConfig) {
    this.key = config.encryptionKey
      ? scryptSync(config.encryptionKey, 'stack-orchestrator/master-key/v1', 32)
      : loadOrCreateKeyFile(join(config.dataDir, 'secrets', 'master.key'));
  }

  encrypt(plaintext: string, context: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(context));
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return [
      VERSION,
      iv.toString('base64url'),
      cipher.getAuthTag().toString('base64url'),
      body.toString('base64url'),
    ].join('.');
  }

  /**
   * A key for `purpose` derived from the master key (HKDF-SHA256): the same on every replica that
   * shares the master key, and unrelated to the key material of any other purpose.
   */
  derive(purpose: string, length: number): Buffer {
    return Buffer.from(hkdfSync('sha256', this.key, 'stack-orchestrator/derived/v1', purpose, length));
  }

  /** Throws when the master key or the context does not match. */
  decrypt(sealed: string, context: string): string {
    const [version, iv, tag, body] = sealed.split('.');
    if (version !== VERSION || !iv || !tag || body === undefined)
      throw new Error('unknown ciphertext format');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'));
    decipher.setAAD(Buffer.from(context));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString(
      'utf8',
    );
  }
}

function loadOrCreateKeyFile(file: string): Buffer {
  if (existsSync(file)) {
    const key = Buffer.from(readFileSync(file, 'utf8').trim(), 'base64');
    if (key.length !== 32) throw new Error(`${file} does not hold a 32-byte base64 key`);
    return key;
  }
  mkdirSync(join(file, '..'), { recursive: true, mode: 0o700 });
  const key = randomBytes(32);
  writeFileSync(file, `${key.toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
  chmodSync(file, 0o600);
  return key;
}
