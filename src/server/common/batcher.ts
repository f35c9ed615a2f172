export interface BatcherOptions {
  /** Batches run at once; calls made while that many run wait for the next batch. */
  concurrency: number;
  /** Calls one batch serves at most. */
  max: number;
}

/**
 * The gathering of the statements each agent's connect or disconnect makes (worker reads, session
 * claims and releases, its jobs' reads): two of a kind at once, of the pool's connections, and up
 * to 500 agents in one.
 */
export const AGENT_GATHERING: BatcherOptions = { concurrency: 2, max: 500 };

interface Pending<K, V> {
  key: K;
  resolve: (value: V) => void;
  reject: (err: unknown) => void;
}

/**
 * Gathers calls into batches: a call made while `concurrency` batches run waits, with the other
 * calls made meanwhile, for the next batch, which `run` serves in one go (one query for many rows).
 * A call made while fewer run starts its batch at once, so a lone call waits for nothing; the
 * batches grow with the load, as when a whole fleet says hello after a restart. A batch starts
 * after each of its calls was made, so it reads nothing older than its callers could. `run` answers
 * with one value per key, in the keys' order; if it fails, every call of the batch fails with it.
 */
export class Batcher<K, V> {
  private readonly pending: Pending<K, V>[] = [];
  private running = 0;

  constructor(
    private readonly run: (keys: K[]) => Promise<V[]>,
    private readonly options: BatcherOptions,
  ) {}

  call(key: K): Promise<V> {
    return new Promise<V>((resolve, reject) => {
      this.pending.push({ key, resolve, reject });
      this.pump();
    });
  }

  private pump(): void {
    while (this.running < this.options.concurrency && this.pending.length > 0) {
      const batch = this.pending.splice(0, this.options.max);
      this.running++;
      void this.serve(batch).finally(() => {
        this.running--;
        this.pump();
      });
    }
  }

  private async serve(batch: Pending<K, V>[]): Promise<void> {
    try {
      const values = await this.run(batch.map((p) => p.key));
      batch.forEach((p, i) => p.resolve(values[i]));
    } catch (err) {
      for (const p of batch) p.reject(err);
    }
  }
}
