import { Injectable } from '@nestjs/common';
import { timingSafeEqual } from 'node:crypto';
import { AuditService } from '../audit/audit.service.js';
import { NotFoundError } from '../common/app-error.js';
import { parseDuration } from '../common/duration.js';
import { type Page, type PageQueryDto, cursorPage, byCreation } from '../common/pagination.js';
import type { Caller } from '../common/request-context.js';
import { randomToken, tokenDigest } from '../common/secrets.js';
import { ValidationFailedError } from '../common/app-error.js';
import { AppConfig } from '../config/config.js';
import type { CreatedJoinToken, JoinTokenView } from '../../contracts/api/join-tokens.js';
import type { CreateJoinTokenDto } from './dto/create-join-token.dto.js';
import { JoinTokenEntity } from './entities/join-token.entity.js';
import { JoinTokensRepository } from './join-tokens.repository.js';
import { validateLabels } from './labels.js';

const PREFIX = 'sojt_';
const MAX_TTL_MS = 365 * 86_400_000;
/** `sojt_<id>.<secret>`: the id is public (lists show it), the secret is 256 random bits. */
export const TOKEN_FORMAT = /^sojt_([A-Za-z0-9_-]{16})\.([A-Za-z0-9_-]{43})$/;

@Injectable()
export class JoinTokensService {
  constructor(
    private readonly repository: JoinTokensRepository,
    private readonly audit: AuditService,
    private readonly config: AppConfig,
  ) {}

  async create(caller: Caller, dto: CreateJoinTokenDto): Promise<CreatedJoinToken> {
    const ttl = dto.ttl === undefined ? this.config.joinTokenTtlMs : parseDuration(dto.ttl);
    if (ttl === undefined || ttl < 60_000 || ttl > MAX_TTL_MS) {
      throw new ValidationFailedError([{ path: 'ttl', message: 'ttl must be between 1m and 365d' }]);
    }
    const labels = validateLabels(dto.labels, 'labels');
    // An id never starts with "-" or "_", so command lines do not mistake it for an option.
    let id = randomToken('', 12);
    while (/^[-_]/.test(id)) id = randomToken('', 12);
    const secret = randomToken('', 32);
    const token = Object.assign(new JoinTokenEntity(), {
      id,
      secretHash: tokenDigest(secret),
      owner: caller.owner,
      preApproved: dto.pre_approved ?? false,
      labels,
      createdBy: caller.clientId,
      createdAt: new Date(),
      expiresAt: new Date(Date.now() + ttl),
      revokedAt: null,
      uses: 0,
    });
    await this.repository.insert(token);
    await this.audit.record({
      action: 'join_token.created',
      target: id,
      details: { pre_approved: token.preApproved },
    });
    return {
      token: `${PREFIX}${id}.${secret}`,
      id,
      expires_at: token.expiresAt.toISOString(),
      pre_approved: token.preApproved,
      labels,
    };
  }

  list(caller: Caller, query: PageQueryDto): Promise<Page<JoinTokenView>> {
    const owner = caller.owner;
    return cursorPage(
      query,
      (take, after) => this.repository.listInOwner(owner, take, after),
      byCreation,
      toView,
    );
  }

  async revoke(caller: Caller, id: string): Promise<void> {
    const owner = caller.owner;
    if (!(await this.repository.findInOwner(owner, id))) throw new NotFoundError(`No join token ${id}.`);
    // Revoking twice is fine and changes nothing: only the first is an event.
    if (await this.repository.revokeInOwner(owner, id)) {
      await this.audit.record({ action: 'join_token.revoked', target: id });
    }
  }

  /** The join token a presented string stands for, if it is well-formed, known, live and matches. */
  async redeem(presented: string): Promise<JoinTokenEntity | undefined> {
    const token = await this.live(presented);
    if (token) await this.repository.countUse(token.id);
    return token;
  }

  /**
   * When a presented string is a live join token of `owner`, its expiry; counts no use (the install
   * command shows a token, it does not spend it). Unknown, expired, revoked, another owner's and
   * malformed are all just undefined, and a malformed one never reaches the database.
   */
  async liveExpiry(owner: string, presented: string): Promise<Date | undefined> {
    const token = await this.live(presented);
    return token?.owner === owner ? token.expiresAt : undefined;
  }

  private async live(presented: string): Promise<JoinTokenEntity | undefined> {
    const match = TOKEN_FORMAT.exec(presented);
    if (!match) return undefined;
    const token = await this.repository.findForEnrollment(match[1]);
    if (!token || token.revokedAt !== null || token.expiresAt.getTime() <= Date.now()) return undefined;
    const expected = Buffer.from(token.secretHash);
    const actual = Buffer.from(tokenDigest(match[2]));
    if (expected.length !== actual.length || !timingSafeEqual(expected, actual)) return undefined;
    return token;
  }
}

function toView(t: JoinTokenEntity): JoinTokenView {
  return {
    id: t.id,
    pre_approved: t.preApproved,
    labels: t.labels,
    created_at: t.createdAt.toISOString(),
    expires_at: t.expiresAt.toISOString(),
    revoked_at: t.revokedAt?.toISOString() ?? null,
    expired: t.expiresAt.getTime() <= Date.now(),
    uses: t.uses,
  };
}
