/**
 * An in-memory inverted index over series label sets (docs/metric-store-design.md, "Series
 * index"): label name → value → ascending series ids. Selection works per label name over its
 * values, never per series: a matcher that cannot match "" selects the union of the postings of
 * the values it accepts; one that matches "" removes the postings of the values it rejects.
 */
import { compileMatcher, type CompiledMatcher } from './matchers.js';
import type { LabelSet, Matcher } from './series.js';

type Postings = number[];

/** Ascending ids in both, ascending out. */
function intersect(a: Postings, b: Postings): Postings {
  const out: Postings = [];
  for (let i = 0, j = 0; i < a.length && j < b.length;) {
    if (a[i] === b[j]) {
      out.push(a[i]);
      i++;
      j++;
    } else if (a[i] < b[j]) i++;
    else j++;
  }
  return out;
}

function subtract(a: Postings, b: Postings): Postings {
  const out: Postings = [];
  for (let i = 0, j = 0; i < a.length;) {
    if (j >= b.length || a[i] < b[j]) out.push(a[i++]);
    else if (a[i] === b[j]) {
      i++;
      j++;
    } else j++;
  }
  return out;
}

function union(lists: Postings[]): Postings {
  if (lists.length === 1) return lists[0];
  const all = lists.flat().sort((x, y) => x - y);
  return all.filter((id, i) => i === 0 || id !== all[i - 1]);
}

export class PostingsIndex {
  private readonly series = new Map<number, LabelSet>();
  private readonly byName = new Map<string, Map<string, Postings>>();
  /** Lists that received an id smaller than their last and must be sorted before use. */
  private readonly unsorted = new Set<Postings>();
  private all: Postings | undefined;

  get size(): number {
    return this.series.size;
  }

  labels(id: number): LabelSet | undefined {
    return this.series.get(id);
  }

  add(id: number, labels: LabelSet): void {
    if (this.series.has(id)) this.remove(id);
    this.series.set(id, labels);
    this.all = undefined;
    for (const { name, value } of labels) {
      let values = this.byName.get(name);
      if (!values) this.byName.set(name, (values = new Map<string, Postings>()));
      const list = values.get(value);
      if (!list) values.set(value, [id]);
      else {
        if (list[list.length - 1] > id) this.unsorted.add(list);
        list.push(id);
      }
    }
  }

  remove(id: number): void {
    const labels = this.series.get(id);
    if (!labels) return;
    this.series.delete(id);
    this.all = undefined;
    for (const { name, value } of labels) {
      const values = this.byName.get(name)!;
      const list = values.get(value)!;
      list.splice(list.indexOf(id), 1);
      if (list.length === 0) {
        values.delete(value);
        this.unsorted.delete(list);
        if (values.size === 0) this.byName.delete(name);
      }
    }
  }

  labelNames(): string[] {
    return [...this.byName.keys()].sort();
  }

  labelValues(name: string): string[] {
    return [...(this.byName.get(name)?.keys() ?? [])].sort();
  }

  private postings(list: Postings): Postings {
    if (this.unsorted.delete(list)) list.sort((x, y) => x - y);
    return list;
  }

  private allIds(): Postings {
    return (this.all ??= [...this.series.keys()].sort((x, y) => x - y));
  }

  /** The postings of every value of `name` that `accept` says yes to. */
  private valuesWhere(name: string, accept: (value: string) => boolean): Postings {
    const values = this.byName.get(name);
    if (!values) return [];
    const lists: Postings[] = [];
    for (const [value, list] of values) if (accept(value)) lists.push(this.postings(list));
    return lists.length === 0 ? [] : union(lists);
  }

  /** Ids of the series matching every matcher, ascending. No matchers: every series. */
  select(matchers: readonly (Matcher | CompiledMatcher)[]): number[] {
    const compiled = matchers.map((m) => ('matchesValue' in m ? m : compileMatcher(m)));
    const include: Postings[] = [];
    const exclude: Postings[] = [];
    for (const m of compiled) {
      const name = m.matcher.name;
      if (!m.matchesValue('')) {
        if (m.literals) {
          const values = this.byName.get(name);
          const lists = [...m.literals].flatMap((v) => {
            const list = values?.get(v);
            return list ? [this.postings(list)] : [];
          });
          include.push(lists.length === 0 ? [] : union(lists));
        } else include.push(this.valuesWhere(name, (v) => m.matchesValue(v)));
      } else {
        exclude.push(this.valuesWhere(name, (v) => !m.matchesValue(v)));
      }
    }
    include.sort((a, b) => a.length - b.length);
    let result = include.length > 0 ? include[0] : this.allIds();
    for (let i = 1; i < include.length && result.length > 0; i++) result = intersect(result, include[i]);
    for (const list of exclude) if (result.length > 0 && list.length > 0) result = subtract(result, list);
    return result === this.all || include.length === 1 ? [...result] : result;
  }
}
