import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  encodeBindingRequest,
  encodeBindingResponse,
  newTransactionId,
  parseBindingRequest,
  parseBindingResponse,
} from './stun-message.js';

// RFC 5769 section 2: the transaction id of every sample, and the sample responses (SOFTWARE,
// XOR-MAPPED-ADDRESS, MESSAGE-INTEGRITY, FINGERPRINT) for 192.0.2.1:32853 and
// [2001:db8:1234:5678:11:2233:4455:6677]:32853.
const TRANSACTION_ID = Buffer.from('b7e7a701bc34d686fa87dfae', 'hex');
const hex = (text: string) => Buffer.from(text.replace(/\s+/g, ''), 'hex');
const IPV4_RESPONSE = hex(`
  0101003c 2112a442 b7e7a701 bc34d686 fa87dfae
  8022000b 74657374 20766563 746f7220
  00200008 0001a147 e112a643
  00080014 2b91f599 fd9e90c3 8c7489f9 2af9ba53 f06be7d7
  80280004 c07d4c96`);
const IPV6_RESPONSE = hex(`
  01010048 2112a442 b7e7a701 bc34d686 fa87dfae
  8022000b 74657374 20766563 746f7220
  00200014 0002a147 0113a9fa a5d3f179 bc25f4b5 bed2b9d9
  00080014 a382954e 4be67bf1 1784c97c 8292c275 bfe3ed41
  80280004 c8fb0b4c`);

describe('STUN messages against the RFC 5769 samples', () => {
  it('reads the IPv4 sample response', () => {
    expect(parseBindingResponse(IPV4_RESPONSE, TRANSACTION_ID)).toEqual({
      kind: 'success',
      mapped: { family: 'IPv4', address: '192.0.2.1', port: 32853 },
      via: 'xor-mapped-address',
    });
  });

  it('reads the IPv6 sample response', () => {
    expect(parseBindingResponse(IPV6_RESPONSE, TRANSACTION_ID)).toEqual({
      kind: 'success',
      mapped: { family: 'IPv6', address: '2001:db8:1234:5678:11:2233:4455:6677', port: 32853 },
      via: 'xor-mapped-address',
    });
  });

  it('encodes XOR-MAPPED-ADDRESS byte for byte as the samples do', () => {
    const v4 = encodeBindingResponse(TRANSACTION_ID, { address: '192.0.2.1', port: 32853 });
    expect(v4.subarray(20)).toEqual(IPV4_RESPONSE.subarray(36, 48));
    const v6 = encodeBindingResponse(TRANSACTION_ID, {
      address: '2001:db8:1234:5678:11:2233:4455:6677',
      port: 32853,
    });
    expect(v6.subarray(20)).toEqual(IPV6_RESPONSE.subarray(36, 60));
  });

  it('encodes a Binding request with the sample request header (no attributes, so length 0)', () => {
    const request = encodeBindingRequest(TRANSACTION_ID);
    expect(request).toEqual(hex('0001 0000 2112a442 b7e7a701 bc34d686 fa87dfae'));
    expect(parseBindingRequest(request)).toEqual(TRANSACTION_ID);
    expect(parseBindingRequest(IPV4_RESPONSE)).toBeNull();
  });

  it('draws a fresh 96-bit transaction id each time', () => {
    const ids = new Set(Array.from({ length: 100 }, () => newTransactionId().toString('hex')));
    expect(ids.size).toBe(100);
    expect([...ids].every((id) => id.length === 24)).toBe(true);
  });
});

describe('STUN responses', () => {
  const id = newTransactionId();

  it('round-trips both families, with and without FINGERPRINT', () => {
    for (const address of ['203.0.113.7', '::1', '::ffff:192.0.2.9', 'fd00::2']) {
      for (const fingerprint of [false, true]) {
        const packet = encodeBindingResponse(id, { address, port: 4242 }, { fingerprint });
        const parsed = parseBindingResponse(packet, id);
        expect(parsed).toMatchObject({ kind: 'success', mapped: { address, port: 4242 } });
      }
    }
  });

  it('falls back to MAPPED-ADDRESS when there is no XOR-MAPPED-ADDRESS', () => {
    const packet = encodeBindingResponse(id, { address: '198.51.100.20', port: 3478 }, { xor: false });
    expect(parseBindingResponse(packet, id)).toEqual({
      kind: 'success',
      mapped: { family: 'IPv4', address: '198.51.100.20', port: 3478 },
      via: 'mapped-address',
    });
  });

  it('prefers XOR-MAPPED-ADDRESS when a server sends both (as coturn does)', () => {
    const xored = encodeBindingResponse(id, { address: '198.51.100.1', port: 1 }).subarray(20);
    const plain = encodeBindingResponse(id, { address: '198.51.100.2', port: 2 }, { xor: false }).subarray(
      20,
    );
    const packet = withAttributes(id, 0x0101, Buffer.concat([plain, xored]));
    expect(parseBindingResponse(packet, id)).toMatchObject({ mapped: { address: '198.51.100.1', port: 1 } });
  });

  it('reads an error response as the end of the transaction, with its code', () => {
    const errorCode = Buffer.from([0x00, 0x09, 0x00, 0x08, 0, 0, 4, 20, ...Buffer.from('Bad!')]);
    expect(parseBindingResponse(withAttributes(id, 0x0111, errorCode), id)).toEqual({
      kind: 'error',
      code: 420,
    });
  });
});

describe('hostile datagrams', () => {
  const id = newTransactionId();
  const good = encodeBindingResponse(id, { address: '203.0.113.7', port: 5000 }, { fingerprint: true });
  const edit = (change: (b: Buffer) => void) => {
    const copy = Buffer.from(good);
    change(copy);
    return copy;
  };

  it.each([
    ['an empty datagram', Buffer.alloc(0), 'shorter than a STUN header'],
    ['19 bytes', good.subarray(0, 19), 'shorter than a STUN header'],
    ['a datagram cut short', good.subarray(0, good.length - 4), 'length field does not match the datagram'],
    ['trailing bytes', Buffer.concat([good, Buffer.alloc(4)]), 'length field does not match the datagram'],
    ['a length not a multiple of 4', edit((b) => b.writeUInt16BE(b.readUInt16BE(2) + 1, 2)), 'length field'],
    ['the first two bits set', edit((b) => (b[0] |= 0x80)), 'first two bits'],
    ['a wrong magic cookie', edit((b) => b.writeUInt32BE(0x2112a443, 4)), 'wrong magic cookie'],
    ['another transaction id', edit((b) => (b[19] ^= 1)), 'another transaction'],
    ['a Binding request', edit((b) => b.writeUInt16BE(0x0001, 0)), 'not a Binding response'],
    ['a broken FINGERPRINT', edit((b) => (b[b.length - 1] ^= 1)), 'FINGERPRINT does not match'],
    ['an altered address under FINGERPRINT', edit((b) => (b[27] ^= 1)), 'FINGERPRINT does not match'],
    ['an attribute longer than the message', edit((b) => b.writeUInt16BE(200, 22)), 'runs past the end'],
  ])('ignores %s', (_name, packet, why) => {
    const result = parseBindingResponse(packet, id);
    expect(result.kind).toBe('ignored');
    expect(result.kind === 'ignored' && result.why).toContain(why);
  });

  it('ignores a response whose only address has an unknown family or a wrong size', () => {
    const address = Buffer.from([0x00, 0x20, 0x00, 0x08, 0, 3, 0, 80, 1, 2, 3, 4]);
    expect(parseBindingResponse(withAttributes(id, 0x0101, address), id)).toEqual({
      kind: 'ignored',
      why: 'no usable mapped address',
    });
    const short = Buffer.from([0x00, 0x20, 0x00, 0x04, 0, 2, 0, 80]);
    expect(parseBindingResponse(withAttributes(id, 0x0101, short), id).kind).toBe('ignored');
  });

  it('never throws on random bytes or on any single-byte change of a valid answer', () => {
    for (let i = 0; i < 2000; i++) {
      const random = randomBytes(i % 120);
      if (i % 2 === 0 && random.length >= 20) {
        // Give half of them a plausible header, so the attribute walk is exercised too.
        random.writeUInt16BE(0x0101, 0);
        random.writeUInt16BE(random.length - 20 - ((random.length - 20) % 4), 2);
        random.writeUInt32BE(0x2112a442, 4);
        id.copy(random, 8);
      }
      expect(() => parseBindingResponse(random, id)).not.toThrow();
      expect(() => parseBindingRequest(random)).not.toThrow();
    }
    for (let at = 0; at < good.length; at++) {
      for (const value of [0x00, 0xff, good[at] ^ 0x55]) {
        const result = parseBindingResponse(
          edit((b) => (b[at] = value)),
          id,
        );
        // The framing, the id or the FINGERPRINT catch a change; one that turns the FINGERPRINT
        // into an unknown attribute leaves the address intact. Never a different address.
        if (result.kind !== 'ignored') {
          expect(result).toMatchObject({ kind: 'success', mapped: { address: '203.0.113.7', port: 5000 } });
        }
      }
    }
  });
});

function withAttributes(id: Buffer, type: number, attributes: Buffer): Buffer {
  const header = Buffer.alloc(20);
  header.writeUInt16BE(type, 0);
  header.writeUInt16BE(attributes.length, 2);
  header.writeUInt32BE(0x2112a442, 4);
  id.copy(header, 8);
  return Buffer.concat([header, attributes]);
}
