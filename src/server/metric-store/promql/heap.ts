/**
 * Go's container/heap, step for step: topk and bottomk must keep the same series as Prometheus
 * when values tie, and that depends on the exact sift order.
 */
export class GoHeap<T> {
  private readonly items: T[];

  constructor(
    private readonly less: (a: T, b: T) => boolean,
    initial: T[] = [],
  ) {
    this.items = [...initial];
  }

  get size(): number {
    return this.items.length;
  }

  peek(): T {
    return this.items[0];
  }

  push(x: T): void {
    this.items.push(x);
    this.up(this.items.length - 1);
  }

  pop(): T {
    const n = this.items.length - 1;
    this.swap(0, n);
    this.down(0, n);
    return this.items.pop()!;
  }

  /** Pops everything: the weakest (by `less`) first. */
  drainSorted(): T[] {
    const out: T[] = [];
    while (this.items.length > 0) out.push(this.pop());
    return out;
  }

  private swap(i: number, j: number): void {
    const t = this.items[i];
    this.items[i] = this.items[j];
    this.items[j] = t;
  }

  private up(j: number): void {
    for (;;) {
      const i = Math.trunc((j - 1) / 2);
      if (i === j || !this.less(this.items[j], this.items[i])) break;
      this.swap(i, j);
      j = i;
    }
  }

  private down(i0: number, n: number): void {
    let i = i0;
    for (;;) {
      const j1 = 2 * i + 1;
      if (j1 >= n) break;
      let j = j1;
      const j2 = j1 + 1;
      if (j2 < n && this.less(this.items[j2], this.items[j1])) j = j2;
      if (!this.less(this.items[j], this.items[i])) break;
      this.swap(i, j);
      i = j;
    }
  }
}
