import { Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { hash } from 'node:crypto';
import { DataSource } from 'typeorm';
import type { Caller } from '../common/request-context.js';
import { every } from '../common/periodic.js';
import { AppConfig } from '../config/config.js';

/** Verified tokens kept per replica; the oldest goes first when full. */
export const TOKEN_CACHE_ENTRIES = 10_000;
/** The verifier's clock tolerance (s): a cached token expires exactly when verification would refuse it. */
export const CLOCK_TOLERANCE_S = 5;
/** Every replica reads the revocations this often: the bound on a revocation made elsewhere. */
export const REVOCATION_POLL_MS = 1_000;
/** Revocations are read this far back each time, so one whose row commits late is still seen. */
const LOOKBACK_MS = 30_000;
/** Pruning of revocations no token can need any more. */
const PRUNE_MS = 60_000;

type Kind = 'client' | 'family';

interface Entry {
  caller: Caller;
  /** When the token stops verifying (ms). */
  until: number;
  familyId: string | undefined;
}

interface RevocationRow {
  id: string;
  kind: Kind;
  subject: string;
  created_at: Date;
}

/** Why a token stopped verifying: it expired, its client was disabled or deleted, its grant revoked. */
export type TokenEnd = 'token_expired' | 'client_revoked' | 'grant_revoked';

/** What `lookup` found: the caller, an expired token, or nothing. */
export const EXPIRED = Symbol('expired');

/**
 * The verified-token cache: a token that verified (signature, claims, active client, live family)
 * is answered from memory until it expires, keyed by the SHA-256 of the Authorization header (the
 * token itself is not kept as a key). Entries go when their client is disabled or deleted or their
 * refresh family is revoked: at once on the replica that does it, and on every other replica within
 * REVOCATION_POLL_MS through `auth_revocations`, read every second like the session directory.
 * Revoked families are also kept in memory for as long as one of their access tokens may live, so a
 * token verified afresh is refused too.
 */
@Injectable()
export class TokenCache implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('auth');
  private readonly entries = new Map<string, Entry>();
  /** Revoked family id → until when its access tokens could still verify (ms). */
  private readonly revokedFamilies = new Map<string, number>();
  /** Revocation rows already applied, by id → created_at (ms), for the look-back window. */
  private readonly seen = new Map<string, number>();
  private readonly listeners = new Set<(kind: Kind, subject: string) => void>();
  private timers: NodeJS.Timeout[] = [];
  /** Changes on every revocation: a verification that began before one is not cached. */
  private gen = 0;

  constructor(
    private readonly dataSource: DataSource,
    private readonly config: AppConfig,
  ) {}

  /** The first read completes before the service answers: a new replica knows every revocation. */
  async onModuleInit(): Promise<void> {
    await this.poll(this.config.accessTokenTtlMs + CLOCK_TOLERANCE_S * 1000);
    this.timers = [
      every(this.logger, 'auth-revocations', REVOCATION_POLL_MS, () => this.poll(LOOKBACK_MS)),
      every(this.logger, 'auth-revocations-prune', PRUNE_MS, () => this.prune()),
    ];
  }

  onModuleDestroy(): void {
    for (const timer of this.timers) clearInterval(timer);
  }

  get generation(): number {
    return this.gen;
  }

  /**
   * Called with each revocation this replica applies, its own and those read from the database.
   * Returns what removes the listener.
   */
  onRevoked(listener: (kind: Kind, subject: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * For a response that outlives its request (a followed log): a signal that aborts when the
   * caller's token stops verifying, that is when it expires, when its client is disabled or deleted,
   * or when its refresh family is revoked (on this replica at once, on the others within
   * REVOCATION_POLL_MS). The signal's reason says which (a {@link TokenEnd}). `release` when the
   * response ends first.
   */
  validity(caller: Caller): { signal: AbortSignal; release: () => void } {
    const ended = new AbortController();
    const familyId = typeof caller.claims.sid === 'string' ? caller.claims.sid : undefined;
    const unlisten = this.onRevoked((kind, subject) => {
      if (kind === 'client' && subject === caller.clientId) ended.abort('client_revoked' satisfies TokenEnd);
      else if (kind === 'family' && subject === familyId) ended.abort('grant_revoked' satisfies TokenEnd);
    });
    const exp = caller.claims.exp;
    // ACCESS_TOKEN_TTL is at most a day, well within a timer's range.
    const timer =
      typeof exp === 'number'
        ? setTimeout(
            () => ended.abort('token_expired' satisfies TokenEnd),
            (exp + CLOCK_TOLERANCE_S) * 1000 - Date.now(),
          )
        : undefined;
    timer?.unref();
    const release = () => {
      clearTimeout(timer);
      unlisten();
    };
    ended.signal.addEventListener('abort', release, { once: true });
    return { signal: ended.signal, release };
  }

  /** The cached caller for this Authorization header; EXPIRED once its token has expired. */
  lookup(authorization: string): Caller | typeof EXPIRED | undefined {
    const key = keyOf(authorization);
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (entry.until <= Date.now()) {
      this.entries.delete(key);
      return EXPIRED;
    }
    return entry.caller;
  }

  /** Keeps a verified caller, unless a revocation happened since `generation` was read. */
  store(authorization: string, caller: Caller, generation: number): void {
    const exp = caller.claims.exp;
    if (generation !== this.gen || typeof exp !== 'number') return;
    const familyId = typeof caller.claims.sid === 'string' ? caller.claims.sid : undefined;
    if (familyId !== undefined && this.revokedFamilies.has(familyId)) return;
    if (this.entries.size >= TOKEN_CACHE_ENTRIES) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    this.entries.set(keyOf(authorization), { caller, until: (exp + CLOCK_TOLERANCE_S) * 1000, familyId });
  }

  isFamilyRevoked(familyId: string): boolean {
    return this.revokedFamilies.has(familyId);
  }

  /** A client was disabled or deleted: its tokens are refused here at once, elsewhere within the bound. */
  revokeClient(clientId: string): Promise<void> {
    return this.revoke('client', clientId);
  }

  /** A refresh family was revoked: its access tokens too. */
  revokeFamily(familyId: string): Promise<void> {
    return this.revoke('family', familyId);
  }

  private async revoke(kind: Kind, subject: string): Promise<void> {
    this.apply(kind, subject, Date.now());
    const [row] = await this.dataSource.query<{ id: string }[]>(
      `INSERT INTO auth_revocations (kind, subject) VALUES ($1, $2) RETURNING id`,
      [kind, subject],
    );
    this.seen.set(row.id, Date.now());
  }

  private apply(kind: Kind, subject: string, at: number): void {
    this.gen++;
    if (kind === 'family') {
      this.revokedFamilies.set(subject, at + this.config.accessTokenTtlMs + CLOCK_TOLERANCE_S * 1000);
    }
    for (const [key, entry] of this.entries) {
      if (kind === 'client' ? entry.caller.clientId === subject : entry.familyId === subject)
        this.entries.delete(key);
    }
    for (const listener of this.listeners) listener(kind, subject);
  }

  /** Applies the revocations of the last `sinceMs` not applied yet. */
  private async poll(sinceMs: number): Promise<void> {
    const rows = await this.dataSource.query<RevocationRow[]>(
      `SELECT id, kind, subject, created_at FROM auth_revocations
        WHERE created_at > clock_timestamp() - $1 * interval '1 millisecond' ORDER BY id`,
      [sinceMs],
    );
    for (const row of rows) {
      if (this.seen.has(row.id)) continue;
      const at = new Date(row.created_at).getTime();
      this.seen.set(row.id, at);
      this.apply(row.kind, row.subject, at);
    }
  }

  /** Forgets what no token can need: rows, seen ids and families past every token's lifetime. */
  private async prune(): Promise<void> {
    const now = Date.now();
    for (const [id, at] of this.seen) if (at < now - 2 * LOOKBACK_MS) this.seen.delete(id);
    for (const [familyId, until] of this.revokedFamilies)
      if (until < now) this.revokedFamilies.delete(familyId);
    for (const [key, entry] of this.entries) if (entry.until <= now) this.entries.delete(key);
    await this.dataSource.query(
      `DELETE FROM auth_revocations WHERE created_at < clock_timestamp() - $1 * interval '1 millisecond'`,
      [this.config.accessTokenTtlMs + CLOCK_TOLERANCE_S * 1000 + LOOKBACK_MS],
    );
  }
}

const keyOf = (authorization: string): string => hash('sha256', authorization, 'base64');
