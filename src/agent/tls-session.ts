import * as grpc from '@grpc/grpc-js';
import { connect, type ConnectionOptions, type TLSSocket } from 'node:tls';
import type { Socket } from 'node:net';

/** What grpc-js' secure connector keeps of a channel's TLS options (channel-credentials.js). */
interface SecureConnectorInternals extends grpc.experimental.SecureConnector {
  connectionOptions?: ConnectionOptions;
}

/**
 * The last TLS session of one identity, offered when the agent connects again: the service issues
 * tickets that survive its restarts and are shared by its replicas, so a reconnecting agent resumes
 * instead of a full handshake. Kept in memory only, and for one certificate: a renewed
 * certificate starts over with a full handshake (a resumed session would present the old one).
 */
export class TlsSessionStore {
  private session: Buffer | undefined;
  private certPem: string | undefined;
  /** Whether the last connection made with this store resumed a session. */
  lastResumed = false;

  /**
   * `keepPeerCertificate`: keep the sessions as OpenSSL serialised them, the service's certificate
   * included (for a comparison in the benchmarks; see `withoutPeerCertificate`).
   */
  constructor(private readonly options: { keepPeerCertificate?: boolean } = {}) {}

  /** The session to offer for `certPem`, if one is kept for it. */
  get(certPem: string): Buffer | undefined {
    return this.certPem === certPem ? this.session : undefined;
  }

  set(certPem: string, session: Buffer): void {
    this.certPem = certPem;
    this.session = this.options.keepPeerCertificate ? session : withoutPeerCertificate(session);
  }

  /** Forgets the session (the service refused the identity, or it changed). */
  clear(): void {
    this.session = undefined;
    this.certPem = undefined;
  }
}

/**
 * `grpc.credentials.createSsl` with TLS session resumption: grpc-js has no option for it, so its
 * secure connector is wrapped to pass the stored session to `tls.connect` and to keep the tickets
 * the service sends. Where grpc-js does not expose its connection options, connections are made
 * as grpc-js makes them, without resumption.
 */
export class ResumingCredentials extends grpc.ChannelCredentials {
  private readonly inner: grpc.ChannelCredentials;

  constructor(
    caPem: Buffer,
    keyPem: Buffer,
    private readonly certPem: string,
    private readonly store: TlsSessionStore,
  ) {
    super();
    this.inner = grpc.credentials.createSsl(caPem, keyPem, Buffer.from(certPem));
  }

  _isSecure(): boolean {
    return true;
  }

  _equals(other: grpc.ChannelCredentials): boolean {
    return other === this;
  }

  _createSecureConnector(
    ...args: Parameters<grpc.ChannelCredentials['_createSecureConnector']>
  ): grpc.experimental.SecureConnector {
    const connector = this.inner._createSecureConnector(...args) as SecureConnectorInternals;
    const options = connector.connectionOptions;
    if (!options) return connector;
    return {
      connect: (socket: Socket) => this.connect(socket, options),
      waitForReady: () => connector.waitForReady(),
      getCallCredentials: () => connector.getCallCredentials(),
      destroy: () => connector.destroy(),
    };
  }

  /** As grpc-js' SecureConnectorImpl.connect, with the session offered and the new ones kept. */
  private connect(
    socket: Socket,
    options: ConnectionOptions,
  ): Promise<grpc.experimental.SecureConnectResult> {
    return new Promise((resolve, reject) => {
      const session = this.store.get(this.certPem);
      const tlsSocket: TLSSocket = connect({ ...options, socket, ...(session ? { session } : {}) }, () => {
        if ((options.rejectUnauthorized ?? true) && !tlsSocket.authorized) {
          reject(tlsSocket.authorizationError);
          return;
        }
        this.store.lastResumed = tlsSocket.isSessionReused();
        resolve({ socket: tlsSocket, secure: true });
      });
      tlsSocket.on('session', (ticket: Buffer) => this.store.set(this.certPem, ticket));
      tlsSocket.on('error', reject);
    });
  }
}

/**
 * A DER element's header at `at`: its tag, where its content starts and where it ends; undefined
 * for what this reader does not take (a multi-byte tag, an indefinite or oversized length, an end
 * past the buffer).
 */
function derElement(
  der: Buffer,
  at: number,
  limit: number,
): { tag: number; start: number; end: number } | undefined {
  if (at + 2 > limit) return undefined;
  const tag = der[at];
  if ((tag & 0x1f) === 0x1f) return undefined;
  let length = der[at + 1];
  let start = at + 2;
  if (length & 0x80) {
    const bytes = length & 0x7f;
    if (bytes === 0 || bytes > 3 || start + bytes > limit) return undefined;
    length = 0;
    for (let i = 0; i < bytes; i++) length = length * 256 + der[start + i];
    start += bytes;
  }
  const end = start + length;
  return end > limit ? undefined : { tag, start, end };
}

/** A DER length's bytes. */
function derLength(length: number): number[] {
  if (length < 0x80) return [length];
  const bytes: number[] = [];
  for (let n = length; n > 0; n = Math.floor(n / 256)) bytes.unshift(n % 256);
  return [0x80 | bytes.length, ...bytes];
}

/** `[3] peer` of OpenSSL's SSL_SESSION_ASN1: the certificate the other side presented. */
const PEER_CERTIFICATE_TAG = 0xa3;

/**
 * A serialised TLS session without the peer's certificate (OpenSSL's `[3] peer` field), or the
 * session as it is where it is not the SEQUENCE this expects. Decoding a session decodes that
 * certificate too, its public key through OpenSSL 3's decoders: 190-210 µs a `setSession` on an
 * idle core against 2-4 µs without it (docs/benchmarks.md, "Reconnect storm", session 24), paid at
 * every dial and twice by Node's `tls.connect({ session })`. Nothing on a resumed connection needs
 * it: TLS 1.3 resumption authenticates the service by the ticket's key, which only the service
 * holds; Node checks the server's name only after a full handshake, and `authorized` comes from the
 * verification result the session keeps.
 */
export function withoutPeerCertificate(session: Buffer): Buffer {
  const top = derElement(session, 0, session.length);
  if (!top || top.tag !== 0x30 || top.end !== session.length) return session;
  const kept: Buffer[] = [];
  let dropped = false;
  for (let at = top.start; at < top.end;) {
    const field = derElement(session, at, top.end);
    if (!field) return session;
    if (field.tag === PEER_CERTIFICATE_TAG) dropped = true;
    else kept.push(session.subarray(at, field.end));
    at = field.end;
  }
  if (!dropped) return session;
  const content = Buffer.concat(kept);
  return Buffer.concat([Buffer.from([0x30, ...derLength(content.length)]), content]);
}
