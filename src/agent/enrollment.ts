import { hostname, platform, arch } from 'node:os';
import type { Logger } from 'pino';
import type { EnrollmentStatusRequest, EnrollRequest } from '../contracts/api/workers.js';
import { certificateFingerprint, IdentityStore, newKeyAndCsr, type Identity } from './identity.js';
import type { AgentOptions } from './agent.js';
import { formatEndpoint, Rotation } from './server-addresses.js';

const MIN_POLL_MS = 500;
const MAX_POLL_MS = 5000;

/** The agent cannot go on (refused enrollment, a CA that is not the pinned one): exit, do not retry. */
export class FatalAgentError extends Error {}

/**
 * Getting an identity over HTTP: enrolling with the join token (the CA pinned), then polling until
 * an operator approves and the certificate arrives. The stream and its renewals are the agent's.
 */
export class Enrollment {
  /** Which --server the next request goes to: the same until one fails to answer. */
  private readonly servers = new Rotation<string>((url) => url);

  constructor(
    private readonly options: AgentOptions,
    private readonly store: IdentityStore,
    private readonly log: Logger,
    private readonly signal: AbortSignal,
    private readonly sleep: (ms: number) => Promise<void>,
  ) {}

  async enroll(previousWorkerId: string | undefined): Promise<Identity> {
    if (!this.options.token)
      throw new FatalAgentError('no identity in the data directory and no --token to enroll with');
    const { keyPem, csrPem } = await newKeyAndCsr(this.options.name ?? hostname());
    const body: EnrollRequest = {
      token: this.options.token,
      csr: csrPem,
      hostname: hostname(),
      // Only the operator's --address: without it the service goes by where the agent connects from.
      ...(this.options.address ? { address: this.options.address } : {}),
      os: platform(),
      arch: arch(),
      version: this.options.version,
      driver: this.options.driver,
      ...(this.options.name ? { name: this.options.name } : {}),
      ...(previousWorkerId ? { previous_worker_id: previousWorkerId } : {}),
      labels: this.options.labels,
    };
    const res = await this.post('/api/v1/orchestrator/workers/enroll', body);
    if (res.status === 401 || res.status === 422) {
      const detail = typeof res.body.detail === 'string' ? res.body.detail : '';
      throw new FatalAgentError(`enrollment refused (${res.status}): ${detail}`);
    }
    if (res.status !== 201 && res.status !== 200)
      throw new Error(`enrollment failed with ${res.status} at ${res.server}`);
    const ca = String(res.body.ca_certificate);
    this.checkPin(ca);
    const identity: Identity = {
      workerId: String(res.body.worker_id),
      enrollmentSecret: String(res.body.enrollment_secret),
      agentEndpoint: this.options.agentEndpoints
        ? this.options.agentEndpoints.map(formatEndpoint).join(',')
        : String(res.body.agent_endpoint),
      keyPem,
      caPem: ca,
      certPem: typeof res.body.certificate === 'string' ? res.body.certificate : null,
    };
    this.store.save(identity);
    this.log.info({ worker_id: identity.workerId, status: res.body.status }, 'enrolled');
    return identity;
  }

  async awaitApproval(identity: Identity): Promise<Identity> {
    this.log.info({ worker_id: identity.workerId }, 'waiting for approval');
    let wait = MIN_POLL_MS;
    while (!this.signal.aborted) {
      const res = await this.post('/api/v1/orchestrator/workers/enroll/status', {
        worker_id: identity.workerId,
        enrollment_secret: identity.enrollmentSecret,
      } satisfies EnrollmentStatusRequest).catch((err: unknown) => {
        if (!this.signal.aborted) this.log.warn({ err: (err as Error).message }, 'approval poll failed');
        return undefined;
      });
      if (res?.status === 401) {
        // The worker was deleted while pending: start over.
        this.store.wipe();
        return this.enroll(undefined);
      }
      if (res?.status === 200 && typeof res.body.certificate === 'string') {
        const approved = { ...identity, certPem: res.body.certificate };
        this.store.save(approved);
        this.log.info({ worker_id: identity.workerId }, 'approved; certificate received');
        return approved;
      }
      await this.sleep(wait);
      wait = Math.min(MAX_POLL_MS, wait * 2);
    }
    return identity;
  }

  private checkPin(caPem: string): void {
    const pin = this.options.caFingerprint
      ?.toLowerCase()
      .replace(/^sha256:/, '')
      .replace(/:/g, '');
    if (!pin) return;
    const actual = certificateFingerprint(caPem);
    if (actual !== pin) {
      throw new FatalAgentError(`the service's CA fingerprint ${actual} does not match the pinned ${pin}`);
    }
  }

  /**
   * POSTs to the --server in use. One that cannot be reached, is overloaded or fails (429, 5xx)
   * sends the next request to the next one; the callers' retries pace it.
   */
  private async post(
    path: string,
    body: unknown,
  ): Promise<{ status: number; body: Record<string, unknown>; server: string }> {
    const server = this.servers.pick(this.options.servers);
    let res: Response;
    try {
      res = await fetch(new URL(path, server), {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
        signal: AbortSignal.any([this.signal, AbortSignal.timeout(30_000)]),
      });
    } catch (err) {
      this.servers.advance();
      if (this.signal.aborted) throw err;
      const cause = (err as { cause?: { code?: string } }).cause?.code;
      throw new Error(`${server}: ${cause ?? (err as Error).message}`, { cause: err });
    }
    if (res.status === 429 || res.status >= 500) this.servers.advance();
    const text = await res.text();
    let parsed: Record<string, unknown> = {};
    try {
      parsed = JSON.parse(text) as Record<string, unknown>;
    } catch {
      // not JSON
    }
    return { status: res.status, body: parsed, server };
  }
}
