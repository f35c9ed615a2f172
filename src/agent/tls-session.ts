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

  /** The session to offer for `certPem`, if one is kept for it. */
  get(certPem: string): Buffer | undefined {
    return this.certPem === certPem ? this.session : undefined;
  }

  set(certPem: string, session: Buffer): void {
    this.certPem = certPem;
    this.session = session;
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
