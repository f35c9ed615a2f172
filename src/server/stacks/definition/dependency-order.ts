/**
 * The order services start in: every service after the ones it depends on. Kahn's algorithm,
 * always taking the alphabetically first ready service, so the output is stable. Dependencies on
 * names that are not in the list are ignored (the validator reports them). Returns null when a
 * cycle leaves services that never become ready.
 */
export function dependencyOrder<S extends { name: string; depends_on: readonly string[] }>(
  services: readonly S[],
): S[] | null {
  const byName = new Map(services.map((s) => [s.name, s]));
  const waiting = new Map<string, number>();
  const dependents = new Map<string, string[]>();
  for (const s of services) {
    const deps = s.depends_on.filter((d) => byName.has(d));
    waiting.set(s.name, deps.length);
    for (const d of deps) {
      const list = dependents.get(d);
      if (list) list.push(s.name);
      else dependents.set(d, [s.name]);
    }
  }
  const ready = new NameHeap();
  for (const s of services) if (waiting.get(s.name) === 0) ready.push(s.name);
  const out: S[] = [];
  for (let name = ready.pop(); name !== undefined; name = ready.pop()) {
    out.push(byName.get(name) as S);
    for (const next of dependents.get(name) ?? []) {
      const left = (waiting.get(next) ?? 0) - 1;
      waiting.set(next, left);
      if (left === 0) ready.push(next);
    }
  }
  return out.length === services.length ? out : null;
}

/** A binary min-heap of names, so ordering stays O(n log n) for large stacks. */
export class NameHeap {
  private readonly items: string[] = [];

  push(name: string): void {
    const a = this.items;
    a.push(name);
    for (let i = a.length - 1; i > 0;) {
      const parent = (i - 1) >> 1;
      if (a[parent] <= a[i]) break;
      [a[parent], a[i]] = [a[i], a[parent]];
      i = parent;
    }
  }

  pop(): string | undefined {
    const a = this.items;
    const top = a[0];
    const last = a.pop();
    if (a.length > 0 && last !== undefined) {
      a[0] = last;
      for (let i = 0; ;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let min = i;
        if (l < a.length && a[l] < a[min]) min = l;
        if (r < a.length && a[r] < a[min]) min = r;
        if (min === i) break;
        [a[min], a[i]] = [a[i], a[min]];
        i = min;
      }
    }
    return top;
  }
}
