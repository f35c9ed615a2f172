import { describe, expect, it } from 'vitest';
import { NameHeap, dependencyOrder } from './dependency-order.js';

const svc = (name: string, ...depends_on: string[]) => ({ name, depends_on });
const order = (services: ReturnType<typeof svc>[]) => dependencyOrder(services)?.map((s) => s.name) ?? null;

describe('dependencyOrder', () => {
  it('puts every service after its dependencies, ready ones alphabetically', () => {
    expect(
      order([
        svc('web', 'api', 'cache'),
        svc('api', 'db'),
        svc('zeta'),
        svc('cache'),
        svc('db'),
        svc('alpha', 'web'),
      ]),
    ).toEqual(['cache', 'db', 'api', 'web', 'alpha', 'zeta']);
  });

  it('returns the same objects, and an empty list for no services', () => {
    const services = [svc('b', 'a'), svc('a')];
    const sorted = dependencyOrder(services);
    expect(sorted?.[0]).toBe(services[1]);
    expect(sorted?.[1]).toBe(services[0]);
    expect(dependencyOrder([])).toEqual([]);
  });

  it('ignores dependencies on names that are not in the list, and repeated ones', () => {
    expect(order([svc('b', 'ghost', 'a', 'a'), svc('a', 'nowhere')])).toEqual(['a', 'b']);
  });

  it('returns null when a cycle leaves services that never become ready', () => {
    expect(order([svc('a', 'b'), svc('b', 'c'), svc('c', 'a'), svc('d')])).toBeNull();
    expect(order([svc('a', 'a')])).toBeNull();
  });

  it('orders a long chain declared backwards', () => {
    const names = Array.from({ length: 5000 }, (_, i) => `s${String(i).padStart(4, '0')}`);
    const services = names.map((name, i) => (i === 0 ? svc(name) : svc(name, names[i - 1]))).reverse();
    expect(order(services)).toEqual(names);
  });
});

describe('NameHeap', () => {
  it('pops names in ascending order, then undefined', () => {
    const heap = new NameHeap();
    const names = ['m', 'c', 'x', 'a', 'q', 'c', 'b', 'z', 'k'];
    for (const name of names) heap.push(name);
    const popped: string[] = [];
    for (let name = heap.pop(); name !== undefined; name = heap.pop()) popped.push(name);
    expect(popped).toEqual([...names].sort());
    expect(heap.pop()).toBeUndefined();
  });

  it('keeps its order while pushes and pops interleave', () => {
    const heap = new NameHeap();
    heap.push('d');
    heap.push('b');
    expect(heap.pop()).toBe('b');
    heap.push('a');
    heap.push('c');
    expect([heap.pop(), heap.pop(), heap.pop(), heap.pop()]).toEqual(['a', 'c', 'd', undefined]);
  });
});
