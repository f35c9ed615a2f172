import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { AuditService } from '../audit/audit.service.js';
import type { ServiceDefinition } from '../stacks/definition/definition.types.js';
import { StackPublishing, type PublishedStack, type StackPublisher } from '../stacks/stack-publishing.js';
import { WorkersService } from '../workers/workers.service.js';
import { TunnelIngress } from './ingress/tunnel-ingress.js';
import { TunnelRepository, type PublishedService } from './tunnel.repository.js';

type Row = Omit<PublishedService, 'stackName'>;

const entry = (r: Row): string => `${r.subdomain} ${r.targetHost}:${r.targetPort}`;

/**
 * Registers the `public` services of a stack when a deploy of it succeeds, as
 * `<service>-<stack>.<base_id>` under the owner's base (created on the first publication), and removes
 * them when the stack is destroyed. Names are stored without TUNNEL_BASE_DOMAIN, so they are kept when
 * no domain is configured and follow the domain when it changes. Everything is in the database, so
 * every replica's ingress sees it (after its 2 s cache).
 */
@Injectable()
export class PublishedServices implements StackPublisher, OnModuleInit {
  private readonly logger = new Logger('tunnel');

  constructor(
    private readonly publishing: StackPublishing,
    private readonly repository: TunnelRepository,
    private readonly workers: WorkersService,
    private readonly ingress: TunnelIngress,
    private readonly audit: AuditService,
  ) {}

  onModuleInit(): void {
    this.publishing.setPublisher(this);
  }

  /** Which of these stacks have services published now. */
  withServices(stackIds: string[]): Promise<Set<string>> {
    return this.repository.stacksWithServices(stackIds);
  }

  async deployed(
    stack: PublishedStack,
    services: ServiceDefinition[],
    workerId: string,
    actor: string,
  ): Promise<void> {
    // `public` is absent (not null) in a revision stored before the key existed.
    const wanted = services.filter((s): s is ServiceDefinition & { public: { port: number } } => !!s.public);
    const before = await this.repository.stackServices(stack.id);
    if (wanted.length === 0 && before.length === 0) return;
    let rows: Row[] = [];
    if (wanted.length > 0) {
      const host = await this.workers.serviceHost(workerId);
      if (host === undefined) {
        this.logger.warn(
          { stack_id: stack.id, worker_id: workerId },
          'no address is known for the worker; the stack services stay published as they were',
        );
        return;
      }
      const { baseId } = await this.base(stack.owner, actor);
      rows = wanted.map((s) => ({
        subdomain: `${s.name}-${stack.name}.${baseId}`,
        baseId,
        owner: stack.owner,
        stackId: stack.id,
        service: s.name,
        workerId,
        targetHost: host,
        targetPort: s.public.port,
      }));
    }
    const published = new Set(await this.repository.replaceStackServices(stack.id, rows));
    this.ingress.forget();
    const refused = rows.filter((r) => !published.has(r.subdomain)).map((r) => r.subdomain);
    if (refused.length > 0)
      this.logger.warn(
        { stack_id: stack.id, subdomains: refused },
        'another stack of the owner holds these subdomains; they are not published',
      );
    const now = rows.filter((r) => published.has(r.subdomain));
    const kept = new Set(now.map(entry));
    if (refused.length === 0 && before.length === now.length && before.every((b) => kept.has(entry(b))))
      return;
    await this.audit.record({
      action: 'tunnel.services_published',
      owner: stack.owner,
      actor,
      target: stack.id,
      details: {
        stack: stack.name,
        worker_id: workerId,
        published: now.map((r) => ({ subdomain: r.subdomain, target: `${r.targetHost}:${r.targetPort}` })),
        removed: before.filter((b) => !published.has(b.subdomain)).map((b) => b.subdomain),
        refused,
      },
    });
  }

  async destroyed(stack: PublishedStack, actor: string): Promise<void> {
    const before = await this.repository.stackServices(stack.id);
    if (before.length === 0) return;
    await this.repository.replaceStackServices(stack.id, []);
    this.ingress.forget();
    await this.audit.record({
      action: 'tunnel.services_unpublished',
      owner: stack.owner,
      actor,
      target: stack.id,
      details: { stack: stack.name, removed: before.map((b) => b.subdomain) },
    });
  }

  /** The owner's base subdomain, created (and audited) on the owner's first publication. */
  private async base(owner: string, actor: string): Promise<{ baseId: string }> {
    const existing = await this.repository.baseOf(owner);
    if (existing) return existing;
    const created = await this.repository.baseFor(owner);
    await this.audit.record({
      action: 'tunnel.base_created',
      owner,
      actor,
      target: created.baseId,
    });
    return created;
  }
}
