// A minimal gRPC client for one bidirectional-streaming method over node:http2, for the simulated
// agents (bench/sim-agents.mjs, `client: 'http2'`): grpc-js costs the load generator so much CPU
// per agent (channel, subchannel, resolver, load balancer, call stack, timers) that with thousands
// of agents on the service's cores the bench measured the agents rather than the service. This is
// the same wire traffic with none of that: one HTTP/2 session per call over the agent's own mTLS
// connection (as grpc-js with a local subchannel pool and `client.close()` after every stream),
// the gRPC request headers, messages framed by hand (flag 0, 4-byte big-endian length, protobuf
// bytes from the method's own serializers), and the call's end surfaced as grpc-js surfaces it to
// a ClientDuplexStream: `data` per message, then `end` (status OK) or `error` with `code`
// (grpc-status from the trailers, or mapped from the HTTP status or the RST_STREAM code as
// grpc-js' subchannel-call does; UNAVAILABLE for a connection that failed or dropped; CANCELLED
// after `cancel()`). Keep-alive pings every 30 s as the agents' grpc-js option. What it leaves
// out: compression (it offers none, so the service sends none), deadlines, metadata, message size
// limits, flow-control window tuning, a ping timeout.
import { EventEmitter } from 'node:events';
import { connect as http2Connect, constants } from 'node:http2';
import { connect as tlsConnect, createSecureContext } from 'node:tls';

export const Status = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  RESOURCE_EXHAUSTED: 8,
  PERMISSION_DENIED: 7,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  UNAUTHENTICATED: 16,
};

const KEEPALIVE_MS = 30_000;
const { NGHTTP2_NO_ERROR, NGHTTP2_CANCEL, NGHTTP2_REFUSED_STREAM, NGHTTP2_ENHANCE_YOUR_CALM } = constants;
const { NGHTTP2_INADEQUATE_SECURITY } = constants;
const noop = () => {};

/** As grpc-js' mapHttpStatusCode. */
function httpStatusCode(status) {
  switch (status) {
    case 400:
      return Status.INTERNAL;
    case 401:
      return Status.UNAUTHENTICATED;
    case 403:
      return Status.PERMISSION_DENIED;
    case 404:
      return Status.UNIMPLEMENTED;
    case 429:
    case 502:
    case 503:
    case 504:
      return Status.UNAVAILABLE;
    default:
      return Status.UNKNOWN;
  }
}

/** As grpc-js' handling of a stream closed without a status, by its RST_STREAM code. */
function rstStatusCode(rstCode, dropped) {
  switch (rstCode) {
    case NGHTTP2_REFUSED_STREAM:
      return Status.UNAVAILABLE;
    case NGHTTP2_CANCEL:
      return dropped ? Status.UNAVAILABLE : Status.CANCELLED;
    case NGHTTP2_ENHANCE_YOUR_CALM:
      return Status.RESOURCE_EXHAUSTED;
    case NGHTTP2_INADEQUATE_SECURITY:
      return Status.PERMISSION_DENIED;
    default:
      return dropped ? Status.UNAVAILABLE : Status.INTERNAL;
  }
}

/**
 * An agent's TLS settings, built once and used for every connection: its key and certificate, the
 * service's CA (a secure context as grpc-js' createSsl builds), and the store of its last TLS
 * session (dist/agent/tls-session.js' TlsSessionStore) when it resumes, or none.
 */
export function agentTls({ caPem, keyPem, certPem, store }) {
  return { context: createSecureContext({ ca: caPem, key: keyPem, cert: certPem }), certPem, store };
}

/**
 * One call of `method` (a grpc-js MethodDefinition: its path and serializers) on its own HTTP/2
 * session to `endpoint` (host:port). `write(message)`, `cancel()`, `close()` (the session, as
 * grpc-js' client.close()); events `data`, `end`, `error` (an Error with `code` and `details`).
 */
export class Http2Call extends EventEmitter {
  constructor(endpoint, method, tls) {
    super();
    this.serialize = method.requestSerialize;
    this.deserialize = method.responseDeserialize;
    /** Unparsed bytes of the next message(s), or null. */
    this.pending = null;
    this.finished = false;
    /** grpc-status and grpc-message once the service sent them. */
    this.status = undefined;
    this.details = '';
    this.httpStatus = undefined;
    /** The connection failed or dropped before the call ended. */
    this.dropped = false;
    const colon = endpoint.lastIndexOf(':');
    const host = endpoint.slice(0, colon).replace(/^\[|\]$/g, '');
    const port = Number(endpoint.slice(colon + 1));
    const session = http2Connect(`https://${endpoint}`, {
      createConnection: () => this.socket(host, port, tls),
      maxSessionMemory: Number.MAX_SAFE_INTEGER,
    });
    this.session = session;
    session.on('error', () => {
      this.dropped = true;
    });
    session.on('close', () => {
      clearInterval(this.keepalive);
      this.dropped = true;
      // A session that never opened the stream (refused or failed connection) ends the call here.
      if (!this.finished) process.nextTick(() => this.finish());
    });
    session.once('connect', () => {
      this.keepalive = setInterval(() => {
        if (!session.closed && !session.destroyed) session.ping(noop);
      }, KEEPALIVE_MS);
    });
    const stream = session.request(
      {
        ':method': 'POST',
        ':path': method.path,
        'content-type': 'application/grpc',
        te: 'trailers',
      },
      { endStream: false },
    );
    this.stream = stream;
    stream.on('response', (headers, flags) => {
      this.httpStatus = headers[':status'];
      // Trailers-only: the status in the headers.
      if (flags & constants.NGHTTP2_FLAG_END_STREAM) this.trailers(headers);
    });
    stream.on('trailers', (headers) => this.trailers(headers));
    stream.on('data', (chunk) => this.read(chunk));
    stream.on('end', () => {
      if (this.status !== undefined) this.finish();
    });
    // Errors come with a `close` (a stream reset, or its session destroyed), where the call ends.
    stream.on('error', noop);
    stream.on('close', () => process.nextTick(() => this.finish()));
  }

  /** The agent's TLS connection, offering its last session and keeping the new ones. */
  socket(host, port, tls) {
    const store = tls.store;
    const session = store?.get(tls.certPem);
    const socket = tlsConnect({
      host,
      port,
      secureContext: tls.context,
      servername: host,
      ALPNProtocols: ['h2'],
    });
    // Not `tlsConnect({ session })`: Node 20 then decodes the session twice (in the TLSSocket
    // constructor and again in tls.connect), ~0.3 ms each, which was a third of a simulated fleet's
    // CPU while it redialled after a restart (docs/benchmarks.md, "Session 15"). This is the second
    // of those two calls alone; the handshake starts only once the TCP connection is up.
    if (session) socket.setSession(session);
    if (store) {
      // TLS 1.3 tickets come after the handshake: kept whenever they arrive, for the next connection.
      socket.on('session', (ticket) => store.set(tls.certPem, ticket));
      socket.once('secureConnect', () => {
        store.lastResumed = socket.isSessionReused();
      });
    }
    return socket;
  }

  trailers(headers) {
    if (this.status !== undefined) return;
    const status = headers['grpc-status'];
    this.status =
      status === undefined
        ? this.httpStatus !== undefined && this.httpStatus !== 200
          ? httpStatusCode(this.httpStatus)
          : Status.UNKNOWN
        : Number(status);
    const message = headers['grpc-message'];
    if (message) this.details = decodeURIComponent(message);
  }

  /** Splits the stream into messages: 1-byte compressed flag, 4-byte length, the message. */
  read(chunk) {
    if (this.finished) return;
    let buffer = this.pending === null ? chunk : Buffer.concat([this.pending, chunk]);
    this.pending = null;
    while (buffer.length >= 5) {
      const length = buffer.readUInt32BE(1);
      if (buffer.length < 5 + length) break;
      if (buffer[0] !== 0) return this.abort(Status.INTERNAL, 'compressed message without an encoding');
      let message;
      try {
        message = this.deserialize(buffer.subarray(5, 5 + length));
      } catch (err) {
        return this.abort(Status.INTERNAL, `failed to parse server response: ${err.message}`);
      }
      buffer = buffer.subarray(5 + length);
      this.emit('data', message);
      if (this.finished) return;
    }
    if (buffer.length > 0) this.pending = buffer;
  }

  write(message) {
    if (this.finished || this.stream.destroyed) return;
    const body = this.serialize(message);
    const frame = Buffer.allocUnsafe(5 + body.length);
    frame[0] = 0;
    frame.writeUInt32BE(body.length, 1);
    frame.set(body, 5);
    this.stream.write(frame);
  }

  /** As grpc-js' call.cancel(): the stream reset, `error` with CANCELLED. */
  cancel() {
    this.abort(Status.CANCELLED, 'Cancelled on client');
  }

  abort(code, details) {
    if (this.finished) return;
    this.status = code;
    this.details = details;
    this.finish();
  }

  /** The call's end, once: `end` for OK, else `error`; the stream closed as grpc-js closes it. */
  finish() {
    if (this.finished) return;
    this.finished = true;
    this.pending = null;
    let code = this.status;
    if (code === undefined) {
      const rst = this.stream.rstCode;
      if (rst === undefined || rst === NGHTTP2_NO_ERROR)
        code =
          this.httpStatus !== undefined && this.httpStatus !== 200
            ? httpStatusCode(this.httpStatus)
            : this.dropped || rst === undefined
              ? Status.UNAVAILABLE
              : Status.INTERNAL;
      else code = rstStatusCode(rst, this.dropped);
    }
    if (!this.stream.destroyed) this.stream.close(code === Status.OK ? NGHTTP2_NO_ERROR : NGHTTP2_CANCEL);
    if (code === Status.OK) this.emit('end');
    else {
      const err = new Error(`${code} ${this.details}`);
      err.code = code;
      err.details = this.details;
      this.emit('error', err);
    }
  }

  /** Ends the session (GOAWAY once its stream is closed; at once if still connecting). */
  close() {
    clearInterval(this.keepalive);
    if (this.session.connecting) this.session.destroy();
    else if (!this.session.closed) this.session.close();
  }
}
