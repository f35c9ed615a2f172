import 'reflect-metadata';
import * as grpc from '@grpc/grpc-js';
import * as x509 from '@peculiar/x509';
import { webcrypto } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { channelOptions } from './agent.js';
import { candidateTarget, type Candidate } from './server-addresses.js';

x509.cryptoProvider.set(webcrypto as never);
const ALG = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;

const pkcs8Pem = async (key: webcrypto.CryptoKey): Promise<string> => {
  const der = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', key));
  const body = der
    .toString('base64')
    .replace(/(.{64})/g, '$1\n')
    .trim();
  return `-----BEGIN PRIVATE KEY-----\n${body}\n-----END PRIVATE KEY-----\n`;
};

/** A CA and a server certificate from it that names `localhost` only (no IP address). */
async function localhostOnlyCertificate(): Promise<{ caPem: string; certPem: string; keyPem: string }> {
  const caKeys = await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify']);
  const ca = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: '01',
    name: 'CN=test CA',
    notBefore: new Date(Date.now() - 60_000),
    notAfter: new Date(Date.now() + 86_400_000),
    signingAlgorithm: ALG,
    keys: caKeys,
    extensions: [new x509.BasicConstraintsExtension(true, 0, true)],
  });
  const keys = await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify']);
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: '02',
    subject: 'CN=server',
    issuer: ca.subject,
    notBefore: new Date(Date.now() - 60_000),
    notAfter: new Date(Date.now() + 86_400_000),
    signingAlgorithm: ALG,
    publicKey: keys.publicKey,
    signingKey: caKeys.privateKey,
    extensions: [
      new x509.SubjectAlternativeNameExtension([{ type: 'dns', value: 'localhost' }]),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
    ],
  });
  return {
    caPem: ca.toString('pem'),
    certPem: cert.toString('pem'),
    keyPem: await pkcs8Pem(keys.privateKey),
  };
}

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
    const pki = await localhostOnlyCertificate();
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
