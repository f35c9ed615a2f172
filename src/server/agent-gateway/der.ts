/**
 * The little DER the CA needs on its hot path (docs/workers.md, "Enrollment cost"): reading a
 * PKCS#10 request and a certificate's subject, and writing a worker's certificate. Parsing with
 * @peculiar/x509 (asn1js) cost about 20 ms of CPU per enrollment; these are byte walks.
 * Only definite lengths of up to four bytes and single-byte tags are read: DER allows nothing else
 * for what is read here, and anything else is refused as malformed.
 */

export class DerError extends Error {}

/** One element: its tag, where its header starts, where its content starts, and where it ends. */
export interface Tlv {
  tag: number;
  start: number;
  body: number;
  end: number;
}

export const TAG = {
  boolean: 0x01,
  integer: 0x02,
  bitString: 0x03,
  octetString: 0x04,
  oid: 0x06,
  utf8String: 0x0c,
  printableString: 0x13,
  ia5String: 0x16,
  utcTime: 0x17,
  generalizedTime: 0x18,
  sequence: 0x30,
  set: 0x31,
} as const;

/** The element at `at` of `der`, which must end by `limit`. */
export function readTlv(der: Uint8Array, at: number, limit = der.length): Tlv {
  if (at + 2 > limit) throw new DerError('truncated element');
  const tag = der[at];
  if ((tag & 0x1f) === 0x1f) throw new DerError('multi-byte tag');
  let length = der[at + 1];
  let body = at + 2;
  if (length & 0x80) {
    const bytes = length & 0x7f;
    if (bytes === 0 || bytes > 4) throw new DerError('unsupported length');
    if (body + bytes > limit) throw new DerError('truncated length');
    length = 0;
    for (let i = 0; i < bytes; i++) length = length * 256 + der[body + i];
    body += bytes;
  }
  const end = body + length;
  if (end > limit) throw new DerError('element past its container');
  return { tag, start: at, body, end };
}

/** Reads the element at `at` and checks its tag. */
export function expectTlv(der: Uint8Array, at: number, tag: number, limit = der.length): Tlv {
  const tlv = readTlv(der, at, limit);
  if (tlv.tag !== tag)
    throw new DerError(`tag 0x${tlv.tag.toString(16)} where 0x${tag.toString(16)} belongs`);
  return tlv;
}

/** The elements directly inside a constructed element. */
export function children(der: Uint8Array, parent: Tlv): Tlv[] {
  const out: Tlv[] = [];
  for (let at = parent.body; at < parent.end;) {
    const tlv = readTlv(der, at, parent.end);
    out.push(tlv);
    at = tlv.end;
  }
  return out;
}

/** An OBJECT IDENTIFIER's content as dotted decimal. */
export function oidString(der: Uint8Array, tlv: Tlv): string {
  if (tlv.tag !== TAG.oid || tlv.end === tlv.body) throw new DerError('not an object identifier');
  const arcs: number[] = [];
  let value = 0;
  for (let i = tlv.body; i < tlv.end; i++) {
    value = value * 128 + (der[i] & 0x7f);
    if (value > Number.MAX_SAFE_INTEGER / 128) throw new DerError('object identifier arc too large');
    if ((der[i] & 0x80) === 0) {
      arcs.push(value);
      value = 0;
    } else if (i === tlv.end - 1) throw new DerError('truncated object identifier');
  }
  const first = Math.min(2, Math.floor(arcs[0] / 40));
  return [first, arcs[0] - first * 40, ...arcs.slice(1)].join('.');
}

// ---- writing ----

function header(tag: number, length: number): Buffer {
  if (length < 0x80) return Buffer.from([tag, length]);
  const bytes: number[] = [];
  for (let n = length; n > 0; n = Math.floor(n / 256)) bytes.unshift(n & 0xff);
  return Buffer.from([tag, 0x80 | bytes.length, ...bytes]);
}

/** One element of `tag` around `content` (several parts are concatenated). */
export function tlv(tag: number, ...content: Uint8Array[]): Buffer {
  const length = content.reduce((n, c) => n + c.length, 0);
  return Buffer.concat([header(tag, length), ...content]);
}

export const sequence = (...content: Uint8Array[]): Buffer => tlv(TAG.sequence, ...content);
export const set = (...content: Uint8Array[]): Buffer => tlv(TAG.set, ...content);
/** `[n]` EXPLICIT (constructed, context-specific). */
export const explicit = (n: number, ...content: Uint8Array[]): Buffer => tlv(0xa0 | n, ...content);
export const octetString = (content: Uint8Array): Buffer => tlv(TAG.octetString, content);
/** A BIT STRING of whole bytes. */
export const bitString = (content: Uint8Array): Buffer => tlv(TAG.bitString, Buffer.from([0]), content);
export const boolean = (value: boolean): Buffer => tlv(TAG.boolean, Buffer.from([value ? 0xff : 0]));
export const utf8String = (value: string): Buffer => tlv(TAG.utf8String, Buffer.from(value, 'utf8'));
/** A name's text: PrintableString when its characters allow, UTF8String otherwise (as @peculiar/x509 writes it). */
export const directoryString = (value: string): Buffer =>
  /^[A-Za-z0-9 '()+,\-./:=?]*$/.test(value)
    ? tlv(TAG.printableString, Buffer.from(value, 'latin1'))
    : utf8String(value);

export function oid(dotted: string): Buffer {
  const arcs = dotted.split('.').map(Number);
  const bytes: number[] = [];
  const base128 = (value: number) => {
    const out = [value & 0x7f];
    for (let v = Math.floor(value / 128); v > 0; v = Math.floor(v / 128)) out.unshift(0x80 | (v & 0x7f));
    bytes.push(...out);
  };
  base128(arcs[0] * 40 + arcs[1]);
  for (const arc of arcs.slice(2)) base128(arc);
  return tlv(TAG.oid, Buffer.from(bytes));
}

/** A non-negative INTEGER from its big-endian bytes, in its minimal encoding. */
export function unsignedInteger(bytes: Uint8Array): Buffer {
  let from = 0;
  while (from < bytes.length - 1 && bytes[from] === 0 && (bytes[from + 1] & 0x80) === 0) from++;
  const body = Buffer.from(bytes.subarray(from));
  return tlv(TAG.integer, (body[0] ?? 0) & 0x80 ? Buffer.concat([Buffer.from([0]), body]) : body);
}

/** UTCTime through 2049, GeneralizedTime after (RFC 5280, 4.1.2.5); whole seconds, UTC. */
export function time(date: Date): Buffer {
  const iso = date.toISOString(); // YYYY-MM-DDTHH:MM:SS.sssZ
  const digits = iso.slice(0, 19).replace(/[-T:]/g, '');
  const year = date.getUTCFullYear();
  return year >= 1950 && year < 2050
    ? tlv(TAG.utcTime, Buffer.from(`${digits.slice(2)}Z`, 'latin1'))
    : tlv(TAG.generalizedTime, Buffer.from(`${digits}Z`, 'latin1'));
}

/** DER as PEM: base64 in lines of 64 between the label's BEGIN and END lines. */
export function pem(label: string, der: Uint8Array): string {
  const body = Buffer.from(der.buffer, der.byteOffset, der.byteLength)
    .toString('base64')
    .replace(/(.{64})/g, '$1\n')
    .trim();
  return `-----BEGIN ${label}-----\n${body}\n-----END ${label}-----\n`;
}
