import { spawn, type ChildProcess } from 'node:child_process';
import { createSocket, type Socket } from 'node:dgram';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { queryPublicAddress } from '../../src/server/tunnel/topology/stun-client.js';
import { encodeBindingResponse, parseBindingRequest } from '../../src/server/tunnel/topology/stun-message.js';

export interface StunEndpoint {
  host: string;
  port: number;
  stop(): Promise<void>;
}

const HOST = '127.0.0.1';
const START_TIMEOUT_MS = 10_000;

/**
 * A real STUN server (coturn's `turnserver`, STUN only, UDP only) on a free loopback port, with
 * its own empty configuration, user database, pid file and log in a temporary directory, so
 * nothing of a system-wide coturn is read or touched. Resolves once it answers a Binding request.
 */
export async function startCoturn(): Promise<StunEndpoint & { log: () => string }> {
  const dir = mkdtempSync(join(tmpdir(), 'so-coturn-'));
  const logFile = join(dir, 'turnserver.log');
  const log = () => {
    try {
      return readFileSync(logFile, 'utf8');
    } catch {
      return '';
    }
  };
  // A port found free can be taken before coturn binds it; another one is tried then.
  let problem = '';
  try {
    for (let attempt = 1; attempt <= 3; attempt++) {
      const port = await freeUdpPort();
      const child = await spawnCoturn(dir, port, logFile);
      problem = (await answers(port, child)) ?? '';
      if (!problem) {
        const stop = async () => {
          await stopChild(child);
          rmSync(dir, { recursive: true, force: true });
        };
        return { host: HOST, port, log, stop };
      }
      await stopChild(child);
    }
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  const tail = log().slice(-2000);
  rmSync(dir, { recursive: true, force: true });
  throw new Error(`coturn did not start on ${HOST}: ${problem}\n${tail}`);
}

async function spawnCoturn(dir: string, port: number, logFile: string): Promise<ChildProcess> {
  const config = join(dir, 'turnserver.conf');
  writeFileSync(config, '');
  const out = openSync(logFile, 'a');
  // prettier-ignore
  const args = [
    '-c', config, '--stun-only', '--listening-ip', HOST, '--listening-port', String(port),
    '--no-tcp', '--no-tls', '--no-dtls', '--no-cli', '--userdb', join(dir, 'turndb'),
    '--pidfile', join(dir, 'turnserver.pid'), '--log-file', 'stdout', '--simple-log',
  ];
  const child = spawn('turnserver', args, { stdio: ['ignore', out, out] });
  closeSync(out);
  await new Promise<void>((resolve, reject) => {
    child.once('spawn', resolve);
    child.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        err.code === 'ENOENT'
          ? new Error(
              'coturn is not installed: the STUN tests need its `turnserver` binary on PATH ' +
                '(Debian/Ubuntu: apt-get install coturn)',
            )
          : err,
      ),
    );
  });
  // A test run that dies without stopping it must not leave a STUN server behind.
  const kill = () => child.kill('SIGKILL');
  process.once('exit', kill);
  child.once('exit', () => process.removeListener('exit', kill));
  return child;
}

/** Null once a Binding request to the port is answered; else why it is not. */
async function answers(port: number, child: ChildProcess): Promise<string | null> {
  const until = Date.now() + START_TIMEOUT_MS;
  while (Date.now() < until) {
    if (child.exitCode !== null || child.signalCode !== null) {
      return `turnserver exited (${child.signalCode ?? child.exitCode}) before answering`;
    }
    const result = await queryPublicAddress([{ host: HOST, port }], { deadlineMs: 250, initialRtoMs: 50 });
    if (result.mapped) return null;
    if (result.attempts[0].outcome === 'refused') await new Promise((r) => setTimeout(r, 50));
  }
  return `no answer to a Binding request within ${START_TIMEOUT_MS} ms`;
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
  await exited;
  clearTimeout(timer);
}

/** A loopback UDP port nothing listens on (it was free a moment ago). */
export async function freeUdpPort(): Promise<number> {
  const socket = createSocket('udp4');
  await new Promise<void>((resolve) => socket.bind(0, HOST, resolve));
  const { port } = socket.address();
  await new Promise<void>((resolve) => socket.close(resolve));
  return port;
}

export interface BindingResponder extends StunEndpoint {
  /** Binding requests received so far, retransmissions included. */
  readonly requests: number;
}

export interface BindingResponderOptions {
  /** The address put in the answer; by default the one the request came from. */
  mappedAddress?: { address: string; port?: number };
  /** Receive and count requests but never answer (a STUN server behind a dropping firewall). */
  silent?: boolean;
}

/**
 * An in-process STUN responder on a free loopback port, for tests that choose what the server
 * says it sees: the address given is only written into the answer, no traffic goes to it.
 */
export async function startBindingResponder(
  options: BindingResponderOptions = {},
): Promise<BindingResponder> {
  const socket: Socket = createSocket('udp4');
  let requests = 0;
  socket.on('message', (packet, from) => {
    const transactionId = parseBindingRequest(packet);
    if (!transactionId) return;
    requests++;
    if (options.silent) return;
    const mapped = options.mappedAddress
      ? { address: options.mappedAddress.address, port: options.mappedAddress.port ?? from.port }
      : { address: from.address, port: from.port };
    socket.send(encodeBindingResponse(transactionId, mapped, { fingerprint: true }), from.port, from.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, HOST, resolve));
  return {
    host: HOST,
    port: socket.address().port,
    get requests() {
      return requests;
    },
    stop: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}
