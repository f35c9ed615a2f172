/**
 * Puts two Prometheus HTTP API answers (Prometheus's and ours) in one shape and lists their
 * differences: the same HTTP status; the same result type, series (exact labels) and timestamps,
 * values equal within 1e-9 relative (NaN and the infinities only equal to themselves); or the
 * same error type.
 */
export interface Normalized {
  /** The HTTP status code. */
  http: number;
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

/** An answer of /api/v1/query or /api/v1/query_range: its HTTP status and parsed JSON body. */
export function normalize({ status: http, body }: { status: number; body: unknown }): Normalized {
  const b = body as ApiBody;
  if (b.status !== 'success')
    return { http, status: 'error', errorType: b.errorType, error: b.error, series: [] };
  const { resultType, result } = b.data!;
  const out: Normalized = { http, status: 'success', resultType, series: [] };
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

export function sameValue(a: number, b: number): boolean {
  if (Number.isNaN(a) || Number.isNaN(b)) return Number.isNaN(a) && Number.isNaN(b);
  if (a === b) return true;
  if (!Number.isFinite(a) || !Number.isFinite(b)) return false;
  return Math.abs(a - b) <= TOLERANCE * Math.max(Math.abs(a), Math.abs(b));
}

/** The differences, empty when the answers agree. `ordered` also compares the order of values. */
export function differences(expected: Normalized, actual: Normalized, ordered: boolean): string[] {
  if (
    expected.http !== actual.http ||
    expected.status !== actual.status ||
    expected.errorType !== actual.errorType
  )
    return [
      `status: prometheus ${expected.http} ${expected.status}/${expected.errorType ?? '-'} (${expected.error ?? ''}), ` +
        `ours ${actual.http} ${actual.status}/${actual.errorType ?? '-'} (${actual.error ?? ''})`,
    ];
  if (expected.status === 'error') return [];
  const out: string[] = [];
  if (expected.resultType !== actual.resultType)
    out.push(`result type: prometheus ${expected.resultType}, ours ${actual.resultType}`);
  const mine = new Map(actual.series.map((s) => [s.key, s]));
  if (mine.size !== actual.series.length) out.push('we answered the same series twice');
  for (const s of expected.series) {
    const m = mine.get(s.key);
    if (!m) {
      out.push(`missing series ${s.key}`);
      continue;
    }
    mine.delete(s.key);
    if (m.points.length !== s.points.length) {
      // Where they part: the first timestamp one has and the other has not.
      const i = s.points.findIndex(([t], j) => m.points[j]?.[0] !== t);
      out.push(
        `${s.key}: ${s.points.length} points from prometheus, ${m.points.length} from us; ` +
          `first apart at #${i}: prometheus ${JSON.stringify(s.points[i])}, ours ${JSON.stringify(m.points[i])}`,
      );
      continue;
    }
    s.points.forEach(([t, v], i) => {
      const [mt, mv] = m.points[i];
      if (t !== mt || !sameValue(v, mv))
        out.push(`${s.key} point ${i}: prometheus [${t}, ${v}], ours [${mt}, ${mv}]`);
    });
  }
  for (const k of mine.keys()) out.push(`extra series ${k}`);
  if (ordered) {
    const values = (n: Normalized): number[] => n.series.map((s) => s.points[0][1]);
    const [a, b] = [values(expected), values(actual)];
    if (a.length === b.length && a.some((v, i) => !sameValue(v, b[i])))
      out.push(`order: prometheus ${JSON.stringify(a)}, ours ${JSON.stringify(b)}`);
  }
  return out.slice(0, 10);
}
