import { describe, expect, it } from 'vitest';
import { peerHost } from './peer-address.js';

describe('peerHost', () => {
  it.each([
    ['127.0.0.1:54321', '127.0.0.1'],
    ['127.0.0.2:1', '127.0.0.2'],
    ['::ffff:127.0.0.1:54321', '127.0.0.1'],
    ['::FFFF:10.1.2.3:80', '10.1.2.3'],
    ['::1:54321', '::1'],
    ['[::1]:54321', '::1'],
    ['2001:DB8::7:443', '2001:db8::7'],
    ['fe80::1%eth0:5000', 'fe80::1'],
    ['10.0.0.9', '10.0.0.9'],
    ['::1', '::1'],
  ])('%s is %s', (peer, host) => {
    expect(peerHost(peer)).toBe(host);
  });

  it.each(['unknown', '', 'localhost:5000', 'example.com:80', '/run/socket', '300.1.1.1:80'])(
    '%j has no address',
    (peer) => {
      expect(peerHost(peer)).toBeUndefined();
    },
  );
});
