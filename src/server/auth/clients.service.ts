import { Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { AuditService } from '../audit/audit.service.js';
import { ConflictError, NotFoundError } from '../common/app-error.js';
import type { ClientView, CreatedClient } from '../../contracts/api/clients.js';
import { type Page, cursorPage } from '../common/pagination.js';
import { RequestContext, type Caller } from '../common/request-context.js';
import { DUMMY_SECRET_HASH, hashSecret, randomToken, verifySecret } from '../common/secrets.js';
import { AppConfig } from '../config/config.js';
import { invalidClient, tooManyAuthFailures } from './auth.errors.js';
import { ClientsRepository } from './clients.repository.js';
import type { CreateClientDto } from './dto/create-client.dto.js';
import type { ListClientsDto } from './dto/list-clients.dto.js';
import { ClientEntity } from './entities/client.entity.js';
import { isOperator, ownerInScope } from './operator.js';
import { RateLimitsService } from './rate-limits.service.js';
import { TokenCache } from './token-cache.js';
import { OPERATOR_OWNER, type Scope } from './scopes.js';

/** How long a replica trusts that a client still exists and is enabled when checking a token. */
const ACTIVE_CACHE_MS = 5000;

@Injectable()
export class ClientsService implements OnApplicationBootstrap {
  private readonly logger = new Logger('auth');
  private readonly active = new Map<string, { ok: boolean; until: number }>();

  constructor(
    private readonly repository: ClientsRepository,
    private readonly limits: RateLimitsService,
    private readonly audit: AuditService,
    private readonly config: AppConfig,
    private readonly tokens: TokenCache,
  ) {
    tokens.onRevoked((kind, subject) => {
      if (kind === 'client') this.active.delete(subject);
    });
  }

  /** First start with no clients: the admin client of CONTRACT.md. */
  async onApplicationBootstrap(): Promise<void> {
    const given = this.config.bootstrapClientId !== undefined;
    const clientId = this.config.bootstrapClientId ?? newClientId();
    const secret = this.config.bootstrapClientSecret ?? newClientSecret();
    const created = await this.repository.insertIfNone(async () =>
      Object.assign(new ClientEntity(), {
        clientId,
        name: 'bootstrap admin',
        owner: OPERATOR_OWNER,
        scopes: ['admin'],
        secretHash: await hashSecret(secret),
        disabled: false,
        createdAt: new Date(),
        lastUsedAt: null,
      }),
    );
    if (!created) return;
    await this.audit.record({
      action: 'client.created',
      owner: OPERATOR_OWNER,
      actor: 'system',
      target: clientId,
      details: { bootstrap: true },
    });
    const consoleUrl = `${this.config.publicUrl}/console`;
    if (given) {
      this.logger.log(
        { client_id: clientId, console_url: consoleUrl },
        `bootstrap admin client created from BOOTSTRAP_CLIENT_ID; sign in at ${consoleUrl}`,
      );
    } else {
      // Printed once, outside the log stream and the log files, so the secret is never in a log record.
      process.stderr.write(
        `\nstack-orchestrator: created the bootstrap admin client (owner "${OPERATOR_OWNER}", scope "admin").\n` +
          `  client_id:     ${clientId}\n  client_secret: ${secret}\n` +
          `  console:       ${consoleUrl}\n` +
          `This secret is shown once. Store it now; set BOOTSTRAP_CLIENT_ID/BOOTSTRAP_CLIENT_SECRET to choose them instead.\n\n`,
      );
      this.logger.warn(
        { client_id: clientId, console_url: consoleUrl },
        'bootstrap admin client generated; its secret was printed once on stderr',
      );
    }
  }

  /**
   * Verifies client credentials. Failures count against the client id and the address, and past
   * AUTH_FAILURE_LIMIT answer 429 before any hashing is done.
   */
  async authenticate(clientId: string, secret: string, scheme: 'Basic' | 'Bearer'): Promise<ClientEntity> {
    const ip = RequestContext.ip();
    const wait = this.limits.authBlockedFor(clientId, ip);
    if (wait > 0) throw tooManyAuthFailures(wait);
    const client = await this.repository.findForAuthentication(clientId);
    // Hash even for unknown clients, so response time does not reveal which ids exist.
    // A secret is printable text: control characters never match. (scrypt's HMAC pads its key with
    // zeros, so the secret with NULs appended would otherwise verify too.)
    const matches =
      (await verifySecret(secret, client?.secretHash ?? DUMMY_SECRET_HASH)) && !CONTROL.test(secret);
    if (!client || !matches || client.disabled) {
      this.limits.recordAuthFailure(clientId, ip);
      const reason = !client ? 'unknown_client' : !matches ? 'bad_secret' : 'disabled';
      await this.audit.record({
        action: 'auth.failed',
        outcome: 'failure',
        owner: client?.owner ?? null,
        actor: null,
        target: client ? clientId : failedClientId(clientId),
        details: { reason },
      });
      throw invalidClient(scheme);
    }
    void this.repository
      .touch(clientId)
      .catch((err: unknown) => this.logger.warn({ err }, 'last_used_at not updated'));
    return client;
  }

  /** Whether tokens of this client may still be used (it exists and is enabled); cached briefly. */
  async isActive(clientId: string): Promise<boolean> {
    const cached = this.active.get(clientId);
    if (cached && cached.until > Date.now()) return cached.ok;
    const generation = this.tokens.generation;
    const client = await this.repository.findForAuthentication(clientId);
    const ok = client !== null && !client.disabled;
    if (this.active.size > 10_000) this.active.clear();
    // An answer read across a revocation is used once, not kept.
    if (generation === this.tokens.generation)
      this.active.set(clientId, { ok, until: Date.now() + ACTIVE_CACHE_MS });
    return ok;
  }

  /** The client behind a refresh token, if it may still obtain tokens. */
  async findActive(clientId: string): Promise<ClientEntity | undefined> {
    const client = await this.repository.findForAuthentication(clientId);
    return client && !client.disabled ? client : undefined;
  }

  async create(caller: Caller, dto: CreateClientDto): Promise<CreatedClient> {
    const { client, secret } = await this.insertClient(ownerInScope(caller, dto.owner), dto.name, dto.scopes);
    return { ...toView(client), client_secret: secret };
  }

  /**
   * A client the service makes for itself on an owner's behalf (a stack's monitoring credentials):
   * audited with the actor `system`; the secret is returned once, as for any client.
   */
  async createInternal(
    owner: string,
    name: string,
    scopes: Scope[],
  ): Promise<{ clientId: string; secret: string }> {
    const { client, secret } = await this.insertClient(owner, name, scopes, 'system');
    return { clientId: client.clientId, secret };
  }

  /** A new enabled client with a fresh secret, stored hashed and audited (the caller's, or `actor`). */
  private async insertClient(
    owner: string,
    name: string,
    scopes: Scope[],
    actor?: string,
  ): Promise<{ client: ClientEntity; secret: string }> {
    const secret = newClientSecret();
    const client = Object.assign(new ClientEntity(), {
      clientId: newClientId(),
      name,
      owner,
      scopes,
      secretHash: await hashSecret(secret),
      disabled: false,
      createdAt: new Date(),
      lastUsedAt: null,
    });
    await this.repository.insert(client);
    await this.audit.record({
      action: 'client.created',
      owner,
      ...(actor !== undefined ? { actor, details: { scopes, name } } : { details: { scopes } }),
      target: client.clientId,
    });
    return { client, secret };
  }

  /** Deletes a client {@link createInternal} made; one already gone is fine. */
  async deleteInternal(owner: string, clientId: string): Promise<void> {
    if (!(await this.repository.deleteInOwner(owner, clientId))) return;
    await this.tokens.revokeClient(clientId);
    await this.audit.record({ action: 'client.deleted', owner, actor: 'system', target: clientId });
  }

  list(caller: Caller, query: ListClientsDto): Promise<Page<ClientView>> {
    const owner = ownerInScope(caller, query.owner);
    return cursorPage(
      query,
      (take, after) => this.repository.listInOwner(owner, take, after),
      (c) => ({ at: c.createdAt.toISOString(), id: c.clientId }),
      toView,
    );
  }

  async setDisabled(caller: Caller, clientId: string, disabled: boolean): Promise<ClientView> {
    const client = await this.findManaged(caller, clientId);
    if (client.clientId === caller.clientId) throw new ConflictError('A client cannot disable itself.');
    await this.repository.setDisabled(client.owner, clientId, disabled);
    if (disabled) await this.tokens.revokeClient(clientId);
    else this.active.delete(clientId);
    await this.audit.record({
      action: 'client.updated',
      owner: client.owner,
      target: clientId,
      details: { disabled },
    });
    return toView({ ...client, disabled });
  }

  async delete(caller: Caller, clientId: string): Promise<void> {
    const client = await this.findManaged(caller, clientId);
    if (client.clientId === caller.clientId) throw new ConflictError('A client cannot delete itself.');
    await this.repository.deleteInOwner(client.owner, clientId);
    await this.tokens.revokeClient(clientId);
    await this.audit.record({ action: 'client.deleted', owner: client.owner, target: clientId });
  }

  /** A client the caller may manage: its own owner's, or any for the operator. Others are 404. */
  private async findManaged(caller: Caller, clientId: string): Promise<ClientEntity> {
    const client = isOperator(caller)
      ? await this.repository.findForAuthentication(clientId)
      : await this.repository.findInOwner(caller.owner, clientId);
    if (!client) throw new NotFoundError(`No client ${clientId}.`);
    return client;
  }
}

const newClientId = (): string => randomToken('cli_', 12);

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;

/** The prefixes of the secrets this service makes: a value with one is a secret, wherever it is sent. */
const SECRET_PREFIXES = ['sos_', 'rt_', 'soes_', 'sojt_'];

/**
 * An unknown client id as the audit trail (and its log record) keeps it: as sent, for the operator
 * who looks for a mistyped id, unless it looks like a secret sent in the wrong field (one of our
 * secrets, a token, or longer than any id), which is replaced by its length.
 */
export function failedClientId(sent: string): string {
  const secretLike =
    sent.length > 64 || sent.startsWith('eyJ') || SECRET_PREFIXES.some((prefix) => sent.startsWith(prefix));
  return secretLike ? `(not kept: ${sent.length} characters that look like a secret)` : sent;
}
const newClientSecret = (): string => randomToken('sos_', 32);

function toView(c: ClientEntity): ClientView {
  return {
    client_id: c.clientId,
    name: c.name,
    owner: c.owner,
    scopes: c.scopes,
    disabled: c.disabled,
    created_at: c.createdAt.toISOString(),
    last_used_at: c.lastUsedAt?.toISOString() ?? null,
  };
}
