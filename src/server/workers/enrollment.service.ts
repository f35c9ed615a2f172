import { Injectable, Logger } from '@nestjs/common';
import { randomUUID, timingSafeEqual } from 'node:crypto';
import type { EnrollmentResult, EnrollmentStatus } from '../../contracts/api/workers.js';
import { AgentEndpoints } from '../agent-gateway/agent-endpoints.js';
import { CaService } from '../agent-gateway/ca.service.js';
import { CertificatesService } from '../agent-gateway/certificates.service.js';
import { AuditService } from '../audit/audit.service.js';
import { RateLimitsService } from '../auth/rate-limits.service.js';
import { RequestContext } from '../common/request-context.js';
import { randomToken, tokenDigest } from '../common/secrets.js';
import { AppConfig } from '../config/config.js';
import type { EnrollDto, EnrollmentStatusDto } from './dto/enroll.dto.js';
import { WorkerEntity } from './entities/worker.entity.js';
import { JoinTokensService } from './join-tokens.service.js';
import { validateLabels } from './labels.js';
import { nextState } from './worker-state.js';
import { invalidEnrollmentSecret, invalidJoinToken, tooManyEnrollmentFailures } from './workers.errors.js';
import { WorkersRepository } from './workers.repository.js';
import { WorkersService } from './workers.service.js';

/**
 * How a node becomes a worker: enrollment with a join token (public, limited per address like
 * token requests) and the pending agent's polls with its enrollment secret until it is approved.
 */
@Injectable()
export class EnrollmentService {
  private readonly logger = new Logger('workers');

  constructor(
    private readonly repository: WorkersRepository,
    private readonly workers: WorkersService,
    private readonly joinTokens: JoinTokensService,
    private readonly certificates: CertificatesService,
    private readonly ca: CaService,
    private readonly endpoints: AgentEndpoints,
    private readonly audit: AuditService,
    private readonly limits: RateLimitsService,
    private readonly config: AppConfig,
  ) {}

  /** `host`: the request's Host header, which tells an agent that came through the tunnel. */
  async enroll(dto: EnrollDto, host?: string): Promise<EnrollmentResult> {
    const ip = RequestContext.ip();
    const wait = this.limits.authBlockedFor(undefined, ip);
    if (wait > 0) throw tooManyEnrollmentFailures(wait);
    // Input first, so a malformed request does not count as a use of the token.
    const requestedLabels = validateLabels(dto.labels, 'labels');
    this.certificates.checkCsr(dto.csr);
    const token = await this.joinTokens.redeem(dto.token);
    if (!token) {
      this.limits.recordAuthFailure(undefined, ip);
      throw invalidJoinToken();
    }
    // The operator's labels (on the join token) win over what the node says about itself.
    const labels = validateLabels({ ...requestedLabels, ...token.labels }, 'labels');
    // An agent whose worker the operator deleted comes back as pending, even with a pre-approved token.
    const deletedBefore =
      dto.previous_worker_id !== undefined && (await this.certificates.wasRevoked(dto.previous_worker_id));
    const preApproved = token.preApproved && !deletedBefore;
    const secret = randomToken('soes_', 32);
    const now = new Date();
    const worker = Object.assign(new WorkerEntity(), {
      id: randomUUID(),
      owner: token.owner,
      name: dto.name ?? dto.hostname.split('.')[0].toLowerCase().slice(0, 63),
      hostname: dto.hostname,
      address: dto.address ?? '',
      os: dto.os,
      arch: dto.arch,
      version: dto.version,
      driver: dto.driver,
      labels,
      status: preApproved ? nextState('pending', { type: 'approved' }, this.workers.thresholds) : 'pending',
      joinTokenId: token.id,
      csr: dto.csr,
      enrollmentSecretHash: tokenDigest(secret),
      metrics: null,
      lastHeartbeat: null,
      approvedAt: preApproved ? now : null,
      createdAt: now,
    });
    await this.repository.insert(worker);
    const certificate = preApproved ? (await this.certificates.issue(worker.id, dto.csr)).pem : null;
    await this.audit.record({
      action: 'worker.enrolled',
      owner: worker.owner,
      actor: `join-token:${token.id}`,
      target: worker.id,
      details: {
        hostname: worker.hostname,
        pre_approved: preApproved,
        previous_worker_id: dto.previous_worker_id ?? null,
      },
    });
    this.logger.log(
      { worker_id: worker.id, status: worker.status, hostname: worker.hostname },
      'worker enrolled',
    );
    return {
      worker_id: worker.id,
      status: worker.status,
      enrollment_secret: secret,
      ca_certificate: this.ca.caPem,
      ca_fingerprint: this.ca.fingerprint,
      certificate,
      agent_endpoint: await this.endpoints.forRequest(host),
      heartbeat_interval_ms: this.config.heartbeatIntervalMs,
    };
  }

  /** A pending agent asks whether it was approved; once it is, it gets its certificate. */
  async enrollmentStatus(dto: EnrollmentStatusDto): Promise<EnrollmentStatus> {
    const ip = RequestContext.ip();
    const wait = this.limits.authBlockedFor(undefined, ip);
    if (wait > 0) throw tooManyEnrollmentFailures(wait);
    const worker = await this.repository.findById(dto.worker_id);
    const expected = Buffer.from(worker?.enrollmentSecretHash ?? tokenDigest('none'));
    const actual = Buffer.from(tokenDigest(dto.enrollment_secret));
    if (!worker || expected.length !== actual.length || !timingSafeEqual(expected, actual)) {
      this.limits.recordAuthFailure(undefined, ip);
      throw invalidEnrollmentSecret();
    }
    if (worker.status === 'pending') return { status: 'pending', certificate: null };
    return {
      status: this.workers.statusOf(worker),
      certificate: (await this.certificates.currentFor(worker.id)) ?? null,
    };
  }
}
