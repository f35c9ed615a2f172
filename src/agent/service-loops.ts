/** One repeating task of one service (a health check, a scrape) with the latest spec it runs. */
export interface ServiceLoop<S> {
  stackId: string;
  name: string;
  spec: S;
  timer: NodeJS.Timeout;
  /** A run is in flight: the next tick is skipped rather than overlapping it. */
  running: boolean;
}

/**
 * One loop per service of each stack, run at the interval its spec says: `setStack` starts loops
 * for new services, restarts those whose spec changed and stops the ones no longer listed. Runs
 * never overlap; timers are unref'd (they never keep the agent alive).
 */
export class ServiceLoops<S, L extends ServiceLoop<S>> {
  private readonly loops = new Map<string, L>();

  constructor(
    private readonly hooks: {
      /** The loop's own state beside its spec (the timer is set afterwards). */
      create(stackId: string, name: string, spec: S): Omit<L, 'timer' | 'running'>;
      /** Handles its own failures: a rejection is ignored. */
      run(loop: L): Promise<void>;
      intervalMs(spec: S): number;
      same(a: S, b: S): boolean;
      /** A loop that stopped for good (its service or stack went, or its spec changed). */
      stopped?(loop: L): void;
    },
  ) {}

  /** Sets the loops of one stack's services (name -> spec); the stack's others stop. */
  setStack(stackId: string, specs: Map<string, S>): void {
    for (const [key, loop] of this.loops) {
      if (loop.stackId !== stackId) continue;
      const spec = specs.get(loop.name);
      if (!spec || !this.hooks.same(spec, loop.spec)) this.stop(key, loop);
    }
    for (const [name, spec] of specs)
      if (!this.loops.has(`${stackId}/${name}`)) this.start(stackId, name, spec);
  }

  /** Sets the loop of one service: started when new, restarted when its spec changed. */
  set(stackId: string, name: string, spec: S): void {
    const key = `${stackId}/${name}`;
    const loop = this.loops.get(key);
    if (loop && this.hooks.same(spec, loop.spec)) return;
    if (loop) this.stop(key, loop);
    this.start(stackId, name, spec);
  }

  removeStack(stackId: string): void {
    this.setStack(stackId, new Map());
  }

  get(stackId: string, name: string): L | undefined {
    return this.loops.get(`${stackId}/${name}`);
  }

  close(): void {
    for (const [key, loop] of this.loops) this.stop(key, loop);
  }

  private start(stackId: string, name: string, spec: S): void {
    const loop = { ...this.hooks.create(stackId, name, spec), running: false } as L;
    loop.timer = setInterval(() => this.tick(loop), this.hooks.intervalMs(spec));
    loop.timer.unref();
    this.loops.set(`${stackId}/${name}`, loop);
    this.tick(loop);
  }

  private stop(key: string, loop: L): void {
    clearInterval(loop.timer);
    this.loops.delete(key);
    this.hooks.stopped?.(loop);
  }

  private tick(loop: L): void {
    if (loop.running) return;
    loop.running = true;
    void this.hooks
      .run(loop)
      .catch(() => undefined)
      .finally(() => (loop.running = false));
  }
}
