/**
 * Literal syntax as Prometheus 2.42 reads it: durations (model.ParseDuration), numbers
 * (strconv.ParseInt with base 0, then ParseFloat), Go-quoted strings, and Go's float text forms.
 */

const DURATION_RE = /^(?:(\d+)y)?(?:(\d+)w)?(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?(?:(\d+)ms)?$/;
const UNIT_MS = [365 * 86_400_000, 7 * 86_400_000, 86_400_000, 3_600_000, 60_000, 1000, 1];

/** A duration in milliseconds, or an error message as Prometheus words it. */
export function parseDuration(text: string): number | string {
  if (text === '0') return 0;
  if (/^\d+$/.test(text)) return 'missing unit character in duration';
  const m = DURATION_RE.exec(text);
  if (!m || text === '') return `not a valid duration string: "${text}"`;
  let ms = 0;
  for (let i = 0; i < UNIT_MS.length; i++) {
    const part = m[i + 1];
    if (part !== undefined) ms += Number(part) * UNIT_MS[i];
  }
  if (!Number.isSafeInteger(ms)) return 'duration out of range';
  return ms;
}

const MAX_INT64 = 2n ** 63n - 1n;

/**
 * A number literal's value, or undefined when 2.42 refuses it: strconv.ParseInt with base 0 first
 * (hex, and octal for a leading 0), then ParseFloat (which has no hex without exponent and fails
 * on overflow); NaN and Inf words in any case.
 */
export function parseNumberLiteral(text: string): number | undefined {
  // lezer folds a sign into the literal, blanks (and comments) between them included.
  const lower = text.replace(/^([+-])(?:\s|#[^\n]*\n)+/, '$1').toLowerCase();
  const sign = lower.startsWith('-') ? -1 : 1;
  const body = lower.replace(/^[+-]/, '');
  if (body === 'inf') return sign * Infinity;
  if (body === 'nan') return NaN;
  if (/^0x[0-9a-f]+$/.test(body)) {
    const n = BigInt(body);
    return n <= MAX_INT64 ? sign * Number(n) : undefined;
  }
  if (/^0[0-7]+$/.test(body)) {
    const n = BigInt(`0o${body.slice(1)}`);
    if (n <= MAX_INT64) return sign * Number(n);
  }
  if (!/^(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?$/.test(body)) return undefined;
  const value = Number(body);
  return Number.isFinite(value) ? sign * value : undefined;
}

const SIMPLE_ESCAPES: Record<string, string> = {
  a: '\x07',
  b: '\b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
  v: '\v',
  '\\': '\\',
};

/** A string literal's value: Go escapes in "..." and '...', none in `...`; undefined when invalid. */
export function unquoteString(text: string): string | undefined {
  const quote = text[0];
  if (text.length < 2 || text[text.length - 1] !== quote) return undefined;
  const body = text.slice(1, -1);
  if (quote === '`') return body.includes('`') ? undefined : body;
  if (quote !== '"' && quote !== "'") return undefined;
  let out = '';
  for (let i = 0; i < body.length; i++) {
    const c = body[i];
    if (c === quote || c === '\n') return undefined;
    if (c !== '\\') {
      out += c;
      continue;
    }
    const e = body[++i];
    if (e === undefined) return undefined;
    if (e in SIMPLE_ESCAPES) out += SIMPLE_ESCAPES[e];
    else if (e === quote) out += e;
    else if (e === 'x' || e === 'u' || e === 'U') {
      const len = e === 'x' ? 2 : e === 'u' ? 4 : 8;
      const hex = body.slice(i + 1, i + 1 + len);
      if (!new RegExp(`^[0-9a-fA-F]{${len}}$`).test(hex)) return undefined;
      const code = parseInt(hex, 16);
      if (code > 0x10ffff || (code >= 0xd800 && code < 0xe000 && e !== 'x')) return undefined;
      out += String.fromCodePoint(code);
      i += len;
    } else if (/[0-7]/.test(e)) {
      const oct = body.slice(i, i + 3);
      if (!/^[0-7]{3}$/.test(oct) || parseInt(oct, 8) > 255) return undefined;
      out += String.fromCharCode(parseInt(oct, 8));
      i += 2;
    } else return undefined;
  }
  return out;
}

/** strconv.ParseFloat's accepted forms (used for `le` bucket bounds); undefined when it would fail. */
export function parseGoFloat(text: string): number | undefined {
  const m = /^([+-]?)(.*)$/s.exec(text);
  if (!m) return undefined;
  const sign = m[1] === '-' ? -1 : 1;
  const body = m[2].toLowerCase();
  if (body === 'inf' || body === 'infinity') return sign * Infinity;
  if (body === 'nan') return m[1] === '' ? NaN : undefined;
  if (/^(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?$/.test(body)) return sign * Number(body);
  if (/^0x(?:[0-9a-f]+\.?[0-9a-f]*|\.[0-9a-f]+)(?:p[+-]?\d+)?$/.test(body)) return sign * parseHexFloat(body);
  return undefined;
}

function parseHexFloat(body: string): number {
  const [mantissa, exp = '0'] = body.slice(2).split('p');
  const [int, frac = ''] = mantissa.split('.');
  const value = parseInt(int || '0', 16) + (frac ? parseInt(frac, 16) / 16 ** frac.length : 0);
  return value * 2 ** Number(exp);
}

/** strconv.FormatFloat(v, 'f', -1, 64): the shortest exact digits, never in exponent form. */
export function formatGoFloat(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  if (Object.is(v, -0)) return '-0';
  const text = String(v);
  const m = /^(-?)(\d)(?:\.(\d+))?e([+-]\d+)$/.exec(text);
  if (!m) return text;
  const [, sign, lead, rest = '', expText] = m;
  const digits = lead + rest;
  const exp = Number(expText);
  if (exp >= 0) {
    const point = 1 + exp;
    return (
      sign +
      (digits.length <= point
        ? digits.padEnd(point, '0')
        : `${digits.slice(0, point)}.${digits.slice(point)}`)
    );
  }
  return `${sign}0.${'0'.repeat(-exp - 1)}${digits}`;
}
