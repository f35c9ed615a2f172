// The floor under bench/agent-memory.mjs: what one mutually authenticated TLS 1.3 connection, and
// one HTTP/2 session with one open stream over it, cost a bare Node server, without gRPC or the
// service. Same curve (P-256), same client-certificate verification as the agent port.
//   node agent-memory-floor.mjs server <tls|tls-noticket|h2|h2-burst|h2-burst-window16> <dir>   (SIGWINCH: two GCs, one JSON line of memory)
//   as a module: certificates(dir) writes ca.pem, server.{pem,key}, client.{pem,key} into dir
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer as createTlsServer } from 'node:tls';
import { createSecureServer } from 'node:http2';
import { constants, webcrypto } from 'node:crypto';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

x509.cryptoProvider.set(webcrypto);
const ALG = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };

const pem = async (key) =>
  `-----BEGIN PRIVATE KEY-----\n${Buffer.from(await webcrypto.subtle.exportKey('pkcs8', key))
    .toString('base64')
    .replace(/(.{64})/g, '$1\n')}\n-----END PRIVATE KEY-----\n`;

export async function certificates(dir) {
  const notBefore = new Date(Date.now() - 60_000);
  const notAfter = new Date(Date.now() + 86_400_000);
  const caKeys = await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify']);
  const ca = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: '01',
    name: 'CN=bench floor CA',
    notBefore,
    notAfter,
    keys: caKeys,
    signingAlgorithm: ALG,
    extensions: [new x509.BasicConstraintsExtension(true, 0, true)],
  });
  const leaf = async (name, serial, extensions) => {
    const keys = await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify']);
    const cert = await x509.X509CertificateGenerator.create({
      serialNumber: serial,
      subject: `CN=${name}`,
      issuer: ca.subject,
      notBefore,
      notAfter,
      publicKey: keys.publicKey,
      signingKey: caKeys.privateKey,
      signingAlgorithm: ALG,
      extensions,
    });
    writeFileSync(join(dir, `${name}.pem`), cert.toString('pem'));
    writeFileSync(join(dir, `${name}.key`), await pem(keys.privateKey));
  };
  writeFileSync(join(dir, 'ca.pem'), ca.toString('pem'));
  await leaf('server', '02', [
    new x509.SubjectAlternativeNameExtension([{ type: 'ip', value: '127.0.0.1' }]),
  ]);
  await leaf('client', '03', []);
}

function loadTrim() {
  try {
    const addon = createRequire(import.meta.url)('../dist/native/malloc-trim.node');
    return () => addon.trim();
  } catch {
    return undefined;
  }
}

if (process.argv[2] === 'server') {
  const [mode, dir] = [process.argv[3], process.argv[4]];
  const options = {
    requestCert: true,
    rejectUnauthorized: true,
    minVersion: 'TLSv1.3',
    ca: readFileSync(join(dir, 'ca.pem')),
    cert: readFileSync(join(dir, 'server.pem')),
    key: readFileSync(join(dir, 'server.key')),
  };
  let server;
  // Without session tickets: what the tickets a TLS 1.3 server sends after the handshake cost.
  if (mode === 'tls-noticket') options.secureOptions = constants.SSL_OP_NO_TICKET;
  if (mode === 'tls' || mode === 'tls-noticket') {
    server = createTlsServer(options, (socket) => {
      socket.on('data', () => {});
      socket.on('error', () => {});
    });
  } else {
    // h2-burst-window16: the stream window an agent's uploads get, 16 KiB instead of HTTP/2's 64.
    const settings = mode === 'h2-burst-window16' ? { initialWindowSize: 16 * 1024 } : {};
    server = createSecureServer({ ...options, settings, ALPNProtocols: ['h2'] });
    server.on('stream', (stream) => {
      stream.respond({ ':status': 200 });
      stream.on('data', () => {});
      stream.on('error', () => {});
    });
    server.on('sessionError', () => {});
  }
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc');
  // Free memory given back before each reading, as the service does every 30 s (memory-trim.ts).
  const trim = loadTrim();
  process.on('SIGWINCH', async () => {
    gc();
    gc();
    await trim?.();
    const status = readFileSync('/proc/self/status', 'utf8');
    const rssAnon = Number(/^RssAnon:\s+(\d+)/m.exec(status)?.[1] ?? 0) * 1024;
    process.send({ type: 'memory', ...process.memoryUsage(), rssAnon });
  });
  server.listen(0, '127.0.0.1', () => process.send({ type: 'ready', port: server.address().port }));
  process.on('message', (m) => m.type === 'stop' && process.exit(0));
}
