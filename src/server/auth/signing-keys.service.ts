import { Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { every } from '../common/periodic.js';
import { SignJWT, type JWK } from 'jose';
import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  type KeyObject,
} from 'node:crypto';
import { withLowS } from './es256.js';
import { AuditService } from '../audit/audit.service.js';
import { SecretBox } from '../common/secret-box.js';
import type { KeyRotation, KeyView } from '../../contracts/api/keys.js';
import type { JsonWebKeySet, PublicJsonWebKey } from '../../contracts/api/well-known.js';
import { AppConfig } from '../config/config.js';
import { SigningKeyEntity } from './entities/signing-key.entity.js';
import { SigningKeysRepository } from './signing-keys.repository.js';

export const JWT_ALG = 'ES256';
/** A P-256 public key as exported: what the key set publishes besides kid, alg and use. */
type EcPublicJwk = Pick<PublicJsonWebKey, 'kty' | 'crv' | 'x' | 'y'>;
const RELOAD_INTERVAL_MS = 30_000;
/** A kid nobody knows triggers a reload at most this often (another replica may have rotated). */
const UNKNOWN_KID_RELOAD_MS = 1000;
const CLOCK_SKEW_MS = 60_000;

interface LoadedKey {
  kid: string;
  publicJwk: JWK;
  /** Parsed once: turning PEM into a key object per verification cost a third of the CPU. */
  publicKey: KeyObject;
  privateKey: KeyObject | undefined;
  createdAt: Date;
  retiredAt: Date | null;
  publishUntil: Date | null;
}

/**
 * ES256 signing keys: created at first start, private halves sealed by SecretBox, public halves
 * published as a JWK set. Rotation adds a key and keeps the old one published until every token it
 * signed has expired. Every replica reloads the set every 30 s and when it meets an unknown kid.
 */
@Injectable()
export class SigningKeysService implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('auth');
  private keys = new Map<string, LoadedKey>();
  private signer: LoadedKey | undefined;
  private lastReload = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly repository: SigningKeysRepository,
    private readonly secrets: SecretBox,
    private readonly config: AppConfig,
    private readonly audit: AuditService,
  ) {}

  async onModuleInit(): Promise<void> {
    const created = await this.repository.ensureActive(() => Promise.resolve(this.newKey()));
    if (created) this.logger.log({ kid: created.kid }, 'signing key created');
    await this.reload();
    this.timer = every(this.logger, 'signing-key-reload', RELOAD_INTERVAL_MS, () => this.reload());
  }

  onModuleDestroy(): void {
    clearInterval(this.timer);
  }

  /** The public key set: the signing key and retired keys still within their publication window. */
  jwks(): JsonWebKeySet {
    const now = Date.now();
    return {
      keys: [...this.keys.values()]
        .filter((k) => k.publishUntil === null || k.publishUntil.getTime() > now)
        .map((k) => ({ ...(k.publicJwk as EcPublicJwk), kid: k.kid, alg: JWT_ALG, use: 'sig' })),
    };
  }

  list(): KeyView[] {
    return [...this.keys.values()].map((k) => ({
      kid: k.kid,
      alg: JWT_ALG,
      status: k === this.signer ? 'signing' : 'published',
      created_at: k.createdAt.toISOString(),
      publish_until: k.publishUntil?.toISOString() ?? null,
    }));
  }

  /** Signs claims as an RFC 9068 access token. */
  async sign(claims: Record<string, unknown>, expiresInSeconds: number): Promise<string> {
    const signer = this.signer;
    if (!signer?.privateKey) throw new Error('no signing key loaded');
    const jws = await new SignJWT(claims)
      .setProtectedHeader({ alg: JWT_ALG, kid: signer.kid, typ: 'at+jwt' })
      .setIssuedAt()
      .setExpirationTime(`${expiresInSeconds}s`)
      .sign(signer.privateKey);
    // Verification refuses high-S signatures, so every token is issued in low-S form.
    return withLowS(jws);
  }

  /** The public key for `kid`, reloading once when the kid is unknown; undefined if none. */
  async verificationKey(kid: string): Promise<KeyObject | undefined> {
    let key = this.keys.get(kid);
    if (!key && Date.now() - this.lastReload > UNKNOWN_KID_RELOAD_MS) {
      await this.reload();
      key = this.keys.get(kid);
    }
    if (!key || (key.publishUntil && key.publishUntil.getTime() <= Date.now())) return undefined;
    return key.publicKey;
  }

  /** Adds a new signing key; the previous ones stay published for a token lifetime and a margin. */
  async rotate(): Promise<KeyRotation> {
    const key = this.newKey();
    const publishFor = this.config.accessTokenTtlMs + RELOAD_INTERVAL_MS + CLOCK_SKEW_MS;
    const retired = await this.repository.rotate(key, publishFor);
    await this.reload();
    this.logger.log({ kid: key.kid, retired }, 'signing key rotated');
    await this.audit.record({ action: 'keys.rotated', target: key.kid, details: { retired } });
    return { kid: key.kid, retired };
  }

  private async reload(): Promise<void> {
    this.lastReload = Date.now();
    const rows = await this.repository.listPublishable();
    const keys = new Map<string, LoadedKey>();
    let signer: LoadedKey | undefined;
    for (const row of rows) {
      const loaded = this.load(row, signer === undefined && row.retiredAt === null);
      if (signer === undefined && row.retiredAt === null) signer = loaded;
      keys.set(row.kid, loaded);
    }
    this.keys = keys;
    this.signer = signer;
  }

  private load(row: SigningKeyEntity, signing: boolean): LoadedKey {
    const cached = this.keys.get(row.kid);
    let privateKey = cached?.privateKey;
    if (signing && !privateKey) {
      let pem: string;
      try {
        pem = this.secrets.decrypt(row.privateKeyEnc, `signing-key:${row.kid}`);
      } catch {
        throw new Error(
          `signing key ${row.kid} cannot be decrypted: ENCRYPTION_KEY (or DATA_DIR/secrets/master.key) is not the one it was sealed with`,
        );
      }
      privateKey = createPrivateKey(pem);
    }
    const publicJwk = row.publicJwk as JWK;
    return {
      kid: row.kid,
      publicJwk,
      publicKey: cached?.publicKey ?? createPublicKey({ key: publicJwk, format: 'jwk' }),
      privateKey: signing ? privateKey : undefined,
      createdAt: row.createdAt,
      retiredAt: row.retiredAt,
      publishUntil: row.publishUntil,
    };
  }

  private newKey(): SigningKeyEntity {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const jwk = publicKey.export({ format: 'jwk' }) as JWK;
    const publicJwk = { kty: jwk.kty!, crv: jwk.crv!, x: jwk.x!, y: jwk.y! };
    // RFC 7638 thumbprint as kid: stable, unique, derived from the key itself.
    const kid = thumbprintSync(publicJwk);
    const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    return Object.assign(new SigningKeyEntity(), {
      kid,
      alg: JWT_ALG,
      publicJwk,
      privateKeyEnc: this.secrets.encrypt(pem, `signing-key:${kid}`),
      createdAt: new Date(),
      retiredAt: null,
      publishUntil: null,
    });
  }
}

/** RFC 7638 JWK thumbprint of an EC public key (members in lexicographic order), base64url SHA-256. */
function thumbprintSync(jwk: { crv: string; kty: string; x: string; y: string }): string {
  const canonical = JSON.stringify({ crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y });
  return createHash('sha256').update(canonical).digest('base64url');
}
