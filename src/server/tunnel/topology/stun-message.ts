import { randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { formatIpv4, formatIpv6, parseIp, type IpFamily } from './ip-address.js';

/** STUN messages (RFC 5389), only as far as a Binding transaction needs them. */

export const MAGIC_COOKIE = 0x2112a442;
const HEADER_LENGTH = 20;
const BINDING_REQUEST = 0x0001;
const BINDING_SUCCESS = 0x0101;
const BINDING_ERROR = 0x0111;
const ATTR_MAPPED_ADDRESS = 0x0001;
const ATTR_ERROR_CODE = 0x0009;
const ATTR_XOR_MAPPED_ADDRESS = 0x0020;
const ATTR_FINGERPRINT = 0x8028;
const FINGERPRINT_XOR = 0x5354554e;
const FAMILY_IPV4 = 0x01;
const FAMILY_IPV6 = 0x02;

export interface MappedAddress {
  family: IpFamily;
  address: string;
  port: number;
}

/** What a datagram turned out to be for the transaction that is waiting. */
export type BindingResponse =
  | { kind: 'success'; mapped: MappedAddress; via: 'xor-mapped-address' | 'mapped-address' }
  | { kind: 'error'; code: number }
  | { kind: 'ignored'; why: string };

/** 96 random bits: the only thing that ties an answer to our request. */
export function newTransactionId(): Buffer {
  return randomBytes(12);
}

export function encodeBindingRequest(transactionId: Uint8Array): Buffer {
  return header(BINDING_REQUEST, 0, transactionId);
}

/**
 * A Binding success response carrying the address in XOR-MAPPED-ADDRESS (or, for servers of
 * RFC 3489's time, MAPPED-ADDRESS), optionally with a FINGERPRINT. Serves the tests' responder.
 */
export function encodeBindingResponse(
  transactionId: Uint8Array,
  mapped: { address: string; port: number },
  options: { xor?: boolean; fingerprint?: boolean } = {},
): Buffer {
  const xor = options.xor ?? true;
  const value = encodeAddress(mapped, xor ? transactionId : null);
  const attribute = Buffer.concat([
    attributeHeader(xor ? ATTR_XOR_MAPPED_ADDRESS : ATTR_MAPPED_ADDRESS, value.length),
    value,
  ]);
  const length = attribute.length + (options.fingerprint ? 8 : 0);
  const message = Buffer.concat([header(BINDING_SUCCESS, length, transactionId), attribute]);
  if (!options.fingerprint) return message;
  const fingerprint = Buffer.alloc(4);
  fingerprint.writeUInt32BE((crc32(message) ^ FINGERPRINT_XOR) >>> 0);
  return Buffer.concat([message, attributeHeader(ATTR_FINGERPRINT, 4), fingerprint]);
}

/** The transaction id of a Binding request, or null for anything else. */
export function parseBindingRequest(packet: Buffer): Buffer | null {
  const framing = checkFraming(packet);
  if (typeof framing === 'string' || packet.readUInt16BE(0) !== BINDING_REQUEST) return null;
  return Buffer.from(packet.subarray(8, HEADER_LENGTH));
}

/**
 * Reads a datagram as the answer to the request with `transactionId`. Anything that is not a
 * well-formed Binding response to exactly that request comes back as `ignored` with the reason;
 * this never throws, whatever the bytes.
 */
export function parseBindingResponse(packet: Buffer, transactionId: Uint8Array): BindingResponse {
  const framing = checkFraming(packet);
  if (typeof framing === 'string') return { kind: 'ignored', why: framing };
  if (!packet.subarray(8, HEADER_LENGTH).equals(transactionId)) {
    return { kind: 'ignored', why: 'answer to another transaction' };
  }
  const type = packet.readUInt16BE(0);
  if (type !== BINDING_SUCCESS && type !== BINDING_ERROR) {
    return { kind: 'ignored', why: `message type 0x${type.toString(16)} is not a Binding response` };
  }
  const attributes = readAttributes(packet);
  if (typeof attributes === 'string') return { kind: 'ignored', why: attributes };
  if (type === BINDING_ERROR) {
    const value = attributes.get(ATTR_ERROR_CODE);
    const code = value && value.length >= 4 ? (value[2] & 0x07) * 100 + value[3] : 0;
    return { kind: 'error', code };
  }
  const xored = attributes.get(ATTR_XOR_MAPPED_ADDRESS);
  const viaXor = xored && decodeAddress(xored, transactionId);
  if (viaXor) return { kind: 'success', mapped: viaXor, via: 'xor-mapped-address' };
  const plain = attributes.get(ATTR_MAPPED_ADDRESS);
  const viaPlain = plain && decodeAddress(plain, null);
  if (viaPlain) return { kind: 'success', mapped: viaPlain, via: 'mapped-address' };
  return { kind: 'ignored', why: 'no usable mapped address' };
}

/** The checks every STUN message passes (RFC 5389 section 7.3), or why it fails them. */
function checkFraming(packet: Buffer): true | string {
  if (packet.length < HEADER_LENGTH) return 'shorter than a STUN header';
  if ((packet[0] & 0xc0) !== 0) return 'not a STUN message (first two bits set)';
  const length = packet.readUInt16BE(2);
  if (length % 4 !== 0 || HEADER_LENGTH + length !== packet.length) {
    return 'length field does not match the datagram';
  }
  if (packet.readUInt32BE(4) !== MAGIC_COOKIE) return 'wrong magic cookie';
  return true;
}

/**
 * The first value of each attribute type (later duplicates are ignored, as RFC 5389 asks), after
 * checking that every attribute fits and that a FINGERPRINT, when there is one, is last and right.
 * Unknown attributes are skipped, even comprehension-required ones: only the address is read, and
 * refusing them would refuse RFC 3489 servers that send CHANGED-ADDRESS.
 */
function readAttributes(packet: Buffer): Map<number, Buffer> | string {
  const attributes = new Map<number, Buffer>();
  let offset = HEADER_LENGTH;
  while (offset < packet.length) {
    if (offset + 4 > packet.length) return 'truncated attribute header';
    const type = packet.readUInt16BE(offset);
    const length = packet.readUInt16BE(offset + 2);
    const end = offset + 4 + length;
    if (end > packet.length) return 'attribute runs past the end of the message';
    if (type === ATTR_FINGERPRINT) {
      if (length !== 4 || end !== packet.length) return 'misplaced FINGERPRINT';
      const expected = (crc32(packet.subarray(0, offset)) ^ FINGERPRINT_XOR) >>> 0;
      if (packet.readUInt32BE(offset + 4) !== expected) return 'FINGERPRINT does not match';
    }
    if (!attributes.has(type)) attributes.set(type, packet.subarray(offset + 4, end));
    offset = end + ((4 - (length % 4)) % 4);
  }
  return attributes;
}

function decodeAddress(value: Buffer, transactionId: Uint8Array | null): MappedAddress | null {
  if (value.length < 4) return null;
  const family = value[1];
  const size = family === FAMILY_IPV4 ? 4 : family === FAMILY_IPV6 ? 16 : 0;
  if (size === 0 || value.length !== 4 + size) return null;
  const mask = transactionId ? xorMask(transactionId) : Buffer.alloc(18);
  const port = value.readUInt16BE(2) ^ mask.readUInt16BE(0);
  const bytes = Buffer.from(value.subarray(4));
  for (let i = 0; i < size; i++) bytes[i] ^= mask[i + 2];
  return size === 4
    ? { family: 'IPv4', address: formatIpv4(bytes), port }
    : { family: 'IPv6', address: formatIpv6(bytes), port };
}

function encodeAddress(mapped: { address: string; port: number }, transactionId: Uint8Array | null): Buffer {
  const bytes = parseIp(mapped.address);
  if (!bytes) throw new RangeError(`not an IP address: ${mapped.address}`);
  const mask = transactionId ? xorMask(transactionId) : Buffer.alloc(18);
  const value = Buffer.alloc(4 + bytes.length);
  value[1] = bytes.length === 4 ? FAMILY_IPV4 : FAMILY_IPV6;
  value.writeUInt16BE(mapped.port ^ mask.readUInt16BE(0), 2);
  for (let i = 0; i < bytes.length; i++) value[4 + i] = bytes[i] ^ mask[i + 2];
  return value;
}

/** The port is XORed with the cookie's top 16 bits, the address with the cookie then the transaction id. */
function xorMask(transactionId: Uint8Array): Buffer {
  const cookie = Buffer.alloc(4);
  cookie.writeUInt32BE(MAGIC_COOKIE);
  return Buffer.concat([cookie.subarray(0, 2), cookie, transactionId]);
}

function header(type: number, length: number, transactionId: Uint8Array): Buffer {
  if (transactionId.length !== 12) throw new RangeError('a STUN transaction id is 12 bytes');
  const out = Buffer.alloc(HEADER_LENGTH);
  out.writeUInt16BE(type, 0);
  out.writeUInt16BE(length, 2);
  out.writeUInt32BE(MAGIC_COOKIE, 4);
  out.set(transactionId, 8);
  return out;
}

function attributeHeader(type: number, length: number): Buffer {
  const out = Buffer.alloc(4);
  out.writeUInt16BE(type, 0);
  out.writeUInt16BE(length, 2);
  return out;
}
