import { Injectable } from '@nestjs/common';
import { StacksService } from '../stacks/stacks.service.js';

/** What the samples and lines an agent sends about a stack are filed under. */
export interface StackTarget {
  id: string;
  owner: string;
  name: string;
}

/** Lookups are kept this long: agents send every few seconds per service. */
const CACHE_MS = 5_000;
const MAX_CACHED = 10_000;

/**
 * Which stack an agent's scrape or output line belongs to: only a stack placed on that very worker
 * (another worker's stack id, or one it no longer runs, is refused), with its owner and name.
 * Cached for a few seconds per stack.
 */
@Injectable()
export class StackTargets {
  private readonly cache = new Map<
    string,
    { at: number; found: (StackTarget & { workerId: string }) | null }
  >();

  constructor(private readonly stacks: StacksService) {}

  async of(stackId: string, workerId: string, now = Date.now()): Promise<StackTarget | null> {
    let cached = this.cache.get(stackId);
    if (cached === undefined || now - cached.at > CACHE_MS) {
      const stack = await this.stacks.find(stackId);
      cached = {
        at: now,
        found: stack?.workerId
          ? { id: stack.id, owner: stack.owner, name: stack.name, workerId: stack.workerId }
          : null,
      };
      if (this.cache.size >= MAX_CACHED) this.cache.delete(this.cache.keys().next().value!);
      this.cache.set(stackId, cached);
    }
    const found = cached.found;
    return found !== null && found.workerId === workerId
      ? { id: found.id, owner: found.owner, name: found.name }
      : null;
  }
}
