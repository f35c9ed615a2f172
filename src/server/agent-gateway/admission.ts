/**
 * At most `limit` holders at once; the others wait in arrival order. Used for agent hellos: when a
 * whole fleet reconnects at once (after a restart), serving them in turn lets each finish well
 * within the agent's welcome timeout, where serving all at once would finish them all late (every
 * hello's queries queued behind everyone's), the agents give up and redial, and no one gets in.
 */
export class Admission {
  private active = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly limit: number) {}

  /** How many wait for a turn. */
  get queued(): number {
    return this.waiting.length;
  }

  /** Resolves with a release function once it is this caller's turn. */
  async acquire(): Promise<() => void> {
    if (this.active < this.limit) this.active++;
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    let released = false;
    return () => {
      if (released) return;
      released = true;
      // The slot passes to the next in line, or frees up.
      const next = this.waiting.shift();
      if (next) next();
      else this.active--;
    };
  }
}
