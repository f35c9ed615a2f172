/**
 * Puts a Prometheus API answer and an engine answer in one shape and lists their differences:
 * the same series (exact labels), the same timestamps, values equal within 1e-9 relative (NaN and
 * the infinities only equal to themselves), or the same error type.
 */
import type { QueryResult } from '../../../src/server/metric-store/promql/index.js';
import { PromqlError } from '../../../src/server/metric-store/promql/index.js';

export interface Normalized {
  status: 'success' | 'error';
  errorType?: string;
  error?: string;
  resultType?: string;
  /** Series in answer order: label key and [ms, value] points. */
  series: { key: string; points: [number, number][] }[];
}

const TOLERANCE = 1e-9;

function parseValue(v: string): number {
  if (v === '+Inf') return Infinity;
  if (v === '-Inf') return -Infinity;
  return Number(v);
}

function key(labels: Record<string, string>): string {
  return JSON.stringify(Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

const ms = (seconds: number): number => Math.round(seconds * 1000);

interface ApiBody {
  status: 'success' | 'error';
  errorType?: string;
  error?: string;
  data?: { resultType: string; result: unknown };
}

export function fromPrometheus(body: unknown): Normalized {
  const b = body as ApiBody;
  if (b.status !== 'success') return { status: 'error', errorType: b.errorType, error: b.error, series: [] };
  const { resultType, result } = b.data!;
  const out: Normalized = { status: 'success', resultType, series: [] };
  if (resultType === 'scalar') {
    const [t, v] = result as [number, string];
    out.series.push({ key: 'scalar', points: [[ms(t), parseValue(v)]] });
  } else if (resultType === 'string') {
    const [t, v] = result as [number, string];
    out.series.push({ key: `string:${v}`, points: [[ms(t), 0]] });
  } else if (resultType === 'vector') {
    for (const s of result as { metric: Record<string, string>; value: [number, string] }[])
      out.series.push({ key: key(s.metric), points: [[ms(s.value[0]), parseValue(s.value[1])]] });
  } else
    for (const s of result as { metric: Record<string, string>; values: [number, string][] }[])
      out.series.push({ key: key(s.metric), points: s.values.map(([t, v]) => [ms(t), parseValue(v)]) });
  return out;
}

export async function fromEngine(run: () => Promise<QueryResult>): Promise<Normalized> {
  let r: QueryResult;
  try {
    r = await run();
  } catch (err) {
    if (err instanceof PromqlError)
      return { status: 'error', errorType: err.errorType, error: err.message, series: [] };
    throw err;
  }
  const labels = (ls: readonly { name: string; value: string }[]): string =>
    key(Object.fromEntries(ls.map((l) => [l.name, l.value])));
  const out: Normalized = { status: 'success', resultType: r.resultType, series: [] };
  if (r.resultType === 'scalar') out.series.push({ key: 'scalar', points: [[r.result.t, r.result.v]] });
  else if (r.resultType === 'string')
    out.series.push({ key: `string:${r.result.v}`, points: [[r.result.t, 0]] });
  else if (r.resultType === 'vector')
    for (const s of r.result) out.series.push({ key: labels(s.metric), points: [[s.t, s.v]] });
  else
    for (const s of r.result)
      out.series.push({ key: labels(s.metric), points: s.t.map((t, i) => [t, s.v[i]] as [number, number]) });
  return out;
}

export function sameValue(a: number, b: number): boolean {
  if (Number.isNaN(a) || Number.isNaN(b)) return Number.isNaN(a) && Number.isNaN(b);
  if (a === b) return true;
  if (!Number.isFinite(a) || !Number.isFinite(b)) return false;
  return Math.abs(a - b) <= TOLERANCE * Math.max(Math.abs(a), Math.abs(b));
}

/** The differences, empty when the answers agree. `ordered` also compares the order of values. */
export function differences(expected: Normalized, actual: Normalized, ordered: boolean): string[] {
  if (expected.status !== actual.status || expected.errorType !== actual.errorType)
    return [
      `status: prometheus ${expected.status}/${expected.errorType ?? '-'} (${expected.error ?? ''}), ` +
        `engine ${actual.status}/${actual.errorType ?? '-'} (${actual.error ?? ''})`,
    ];
  if (expected.status === 'error') return [];
  const out: string[] = [];
  if (expected.resultType !== actual.resultType)
    out.push(`result type: prometheus ${expected.resultType}, engine ${actual.resultType}`);
  const mine = new Map(actual.series.map((s) => [s.key, s]));
  if (mine.size !== actual.series.length) out.push('engine answered the same series twice');
  for (const s of expected.series) {
    const m = mine.get(s.key);
    if (!m) {
      out.push(`missing series ${s.key}`);
      continue;
    }
    mine.delete(s.key);
    if (m.points.length !== s.points.length) {
      out.push(`${s.key}: ${s.points.length} points from prometheus, ${m.points.length} from the engine`);
      continue;
    }
    s.points.forEach(([t, v], i) => {
      const [mt, mv] = m.points[i];
      if (t !== mt || !sameValue(v, mv))
        out.push(`${s.key} point ${i}: prometheus [${t}, ${v}], engine [${mt}, ${mv}]`);
    });
  }
  for (const k of mine.keys()) out.push(`extra series ${k}`);
  if (ordered) {
    const values = (n: Normalized): number[] => n.series.map((s) => s.points[0][1]);
    const [a, b] = [values(expected), values(actual)];
    if (a.length === b.length && a.some((v, i) => !sameValue(v, b[i])))
      out.push(`order: prometheus ${JSON.stringify(a)}, engine ${JSON.stringify(b)}`);
  }
  return out.slice(0, 10);
}
