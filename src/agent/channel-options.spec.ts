import 'reflect-metadata';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serverCertificate } from '../../test/support/pki.js';
import { channelOptions } from './agent.js';
import { candidateTarget, type Candidate } from './server-addresses.js';

/** Connects and answers READY, or TRANSIENT_FAILURE when the connection (here: TLS) is refused. */
function settle(client: grpc.Client): Promise<grpc.connectivityState> {
  const channel = client.getChannel();
  return new Promise((resolve, reject) => {
    const watch = () => {
      const state = channel.getConnectivityState(true);
      if (state === grpc.connectivityState.READY || state === grpc.connectivityState.TRANSIENT_FAILURE) {
        resolve(state);
        return;
      }
      channel.watchConnectivityState(state, Date.now() + 20_000, (err) => (err ? reject(err) : watch()));
    };
    watch();
  });
}

describe('a candidate resolved from a name, dialled at its IP', () => {
  let server: grpc.Server;
  let port = 0;
  let caPem = '';

  beforeAll(async () => {
    // The certificate names localhost only, no IP address.
    const pki = await serverCertificate(['localhost']);
    caPem = pki.caPem;
    server = new grpc.Server();
    const credentials = grpc.ServerCredentials.createSsl(
      null,
      [{ private_key: Buffer.from(pki.keyPem), cert_chain: Buffer.from(pki.certPem) }],
      false,
    );
    port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', credentials, (err, p) => (err ? reject(err) : resolve(p))),
    );
  });
  afterAll(() => server?.forceShutdown());

  const dial = async (name: string): Promise<grpc.connectivityState> => {
    const candidate: Candidate = { address: '127.0.0.1', port, name };
    const client = new grpc.Client(
      candidateTarget(candidate),
      grpc.credentials.createSsl(Buffer.from(caPem)),
      channelOptions(candidate),
    );
    try {
      return await settle(client);
    } finally {
      client.close();
    }
  };

  it('passes the TLS check when the certificate names the name that was given', async () => {
    expect(await dial('localhost')).toBe(grpc.connectivityState.READY);
  });

  it('fails it when the certificate names neither that name nor the IP', async () => {
    expect(await dial('orch.example')).toBe(grpc.connectivityState.TRANSIENT_FAILURE);
    // Dialled as an IP (an endpoint given as 127.0.0.1): the certificate does not name the IP.
    expect(await dial('127.0.0.1')).toBe(grpc.connectivityState.TRANSIENT_FAILURE);
  });

  it('sets nothing for an endpoint given as an IP', () => {
    expect(channelOptions({ address: '127.0.0.1', port: 1, name: '127.0.0.1' })).toEqual({});
    expect(channelOptions({ address: '::1', port: 1, name: 'localhost' })).toEqual({
      'grpc.ssl_target_name_override': 'localhost',
      'grpc.default_authority': 'localhost:1',
    });
  });
});
