import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { hostPort } from './provider-settings.js';
import {
  checkSshSettings,
  fingerprintFromHex,
  normalizeFingerprint,
  validSshSettings,
  type SshTunnelSettings,
} from './ssh-settings.js';

// A public key and the fingerprint `ssh-keygen -lf` printed for it.
const PUBLIC_KEY = 'AAAAC3NzaC1lZDI1NTE5AAAAIDz9veGrx9KM+S+a2b/6U+8e6PA2REI1155eI/2kBpiJ';
const PRINTED = 'SHA256:KiFhQNEpL4oqhy/MZoCfaWpmISQy1Z21k+2zqld2YFs';

const dir = mkdtempSync(join(tmpdir(), 'so-ssh-settings-'));
const keyFile = join(dir, 'id_ed25519');
writeFileSync(keyFile, 'a key\n', { mode: 0o600 });
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const good: SshTunnelSettings = {
  host: 'relay.example.test',
  user: 'tunnel',
  keyFile,
  hostKey: PRINTED,
  remotePort: 8080,
  agentRemotePort: 5263,
  publicUrl: 'https://orchestrator.example.test',
};

describe('host key fingerprints', () => {
  it('computes what ssh-keygen prints from the digest ssh2 hands the verifier', () => {
    const hex = createHash('sha256').update(Buffer.from(PUBLIC_KEY, 'base64')).digest('hex');
    expect(fingerprintFromHex(hex)).toBe(PRINTED);
  });

  it("accepts ssh-keygen's form, tolerating padding and surrounding spaces", () => {
    expect(normalizeFingerprint(PRINTED)).toBe(PRINTED);
    expect(normalizeFingerprint(` ${PRINTED}=\n`)).toBe(PRINTED);
  });

  it.each([
    ['an MD5 fingerprint', 'MD5:2b:1a:9d:21:93:9c:7e:6b:2f:1f:c5:e8:0b:4c:77:2a'],
    ['the old hex form', '2b:1a:9d:21:93:9c:7e:6b:2f:1f:c5:e8:0b:4c:77:2a'],
    ['no prefix', PRINTED.slice('SHA256:'.length)],
    ['a lower-case prefix', PRINTED.toLowerCase()],
    ['a truncated digest', PRINTED.slice(0, -1)],
    ['the whole ssh-keygen line', `256 ${PRINTED} root@relay (ED25519)`],
    ['a public key', `ssh-ed25519 ${PUBLIC_KEY}`],
  ])('refuses %s', (_what, value) => {
    expect(normalizeFingerprint(value)).toBeUndefined();
  });
});

describe('checkSshSettings', () => {
  it('finds nothing wrong with complete settings', () => {
    expect(checkSshSettings(good)).toEqual([]);
    expect(validSshSettings({ ...good, hostKey: `${PRINTED}=` })).toEqual({
      ...good,
      port: 22,
      hostKey: PRINTED,
    });
  });

  it('names every missing variable in a sentence of its own', () => {
    const problems = checkSshSettings({});
    expect(problems.map((p) => p.split(' ')[0])).toEqual([
      'TUNNEL_SSH_HOST',
      'TUNNEL_SSH_USER',
      'TUNNEL_SSH_KEY_FILE',
      'TUNNEL_SSH_HOST_KEY',
      'TUNNEL_SSH_REMOTE_PORT',
      'TUNNEL_SSH_AGENT_REMOTE_PORT',
      'TUNNEL_PUBLIC_URL',
    ]);
    expect(problems.every((p) => p.includes('is not set'))).toBe(true);
    expect(validSshSettings({})).toBeUndefined();
  });

  it('refuses to go without a verifiable host key, and says how to get one', () => {
    const [missing] = checkSshSettings({ ...good, hostKey: undefined });
    expect(missing).toContain('does not connect to a relay it cannot verify');
    expect(missing).toContain('ssh-keygen -lf');
    const [malformed] = checkSshSettings({ ...good, hostKey: 'MD5:2b:1a' });
    expect(malformed).toMatch(/^TUNNEL_SSH_HOST_KEY must be a SHA256 fingerprint/);
  });

  it.each([
    [{ port: 0 }, 'TUNNEL_SSH_PORT must be a port number from 1 to 65535 (got 0).'],
    [{ remotePort: 70000 }, 'TUNNEL_SSH_REMOTE_PORT must be a port number from 1 to 65535 (got 70000).'],
    [
      { agentRemotePort: 8080 },
      'TUNNEL_SSH_REMOTE_PORT and TUNNEL_SSH_AGENT_REMOTE_PORT must be different ports.',
    ],
    [{ host: 'tunnel@relay' }, 'TUNNEL_SSH_HOST must be a host name or an IP address.'],
    [{ user: '  ' }, 'TUNNEL_SSH_USER is not set: the user to log in as on the relay.'],
    [
      { publicUrl: 'relay.example.test' },
      'TUNNEL_PUBLIC_URL must be an http or https URL without credentials.',
    ],
    [
      { publicUrl: 'ftp://relay.example.test' },
      'TUNNEL_PUBLIC_URL must be an http or https URL without credentials.',
    ],
    [
      { publicUrl: 'https://u:p@relay.test' },
      'TUNNEL_PUBLIC_URL must be an http or https URL without credentials.',
    ],
    [
      { keyFile: join(dir, 'absent') },
      `TUNNEL_SSH_KEY_FILE ${join(dir, 'absent')} cannot be read (no such file).`,
    ],
    [{ keyFile: dir }, `TUNNEL_SSH_KEY_FILE ${dir} is not a file.`],
  ])('explains %j', (change, problem) => {
    expect(checkSshSettings({ ...good, ...change })).toEqual([problem]);
  });
});

describe('hostPort', () => {
  it('brackets IPv6 literals', () => {
    expect(hostPort('relay.example.test', 5263)).toBe('relay.example.test:5263');
    expect(hostPort('2001:db8::1', 5263)).toBe('[2001:db8::1]:5263');
  });
});
