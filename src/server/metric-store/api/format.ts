/**
 * Numbers as the Prometheus API writes them: sample values as strings in Go's
 * strconv.FormatFloat(v, 'f', -1, 64) (shortest round-trip digits, never an exponent; NaN, +Inf,
 * -Inf), timestamps as seconds with at most three decimals (util/jsonutil.MarshalTimestamp).
 */
export function formatValue(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Infinity) return '+Inf';
  if (value === -Infinity) return '-Inf';
  const text = String(value);
  const exp = text.indexOf('e');
  if (exp < 0) return Object.is(value, -0) ? '-0' : text;
  return expand(text.slice(0, exp), Number(text.slice(exp + 1)));
}

/** `d.ddd` times 10^power written out in positional notation. */
function expand(mantissa: string, power: number): string {
  const negative = mantissa.startsWith('-');
  const [whole, fraction = ''] = (negative ? mantissa.slice(1) : mantissa).split('.');
  const digits = whole + fraction;
  const point = whole.length + power;
  const body =
    point <= 0
      ? `0.${'0'.repeat(-point)}${digits}`
      : point >= digits.length
        ? digits + '0'.repeat(point - digits.length)
        : `${digits.slice(0, point)}.${digits.slice(point)}`;
  return negative ? `-${body}` : body;
}

/** A millisecond timestamp as API seconds: 1500 → 1.5, 1000 → 1, -1 → -0.001. */
export function formatTimestamp(ms: number): number {
  return ms / 1000;
}
