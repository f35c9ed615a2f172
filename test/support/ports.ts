import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

// Ports for services a test starts itself (a relay, a stack's service, a child process).
//
// `listen(0)` then `close()` hands out a port from the kernel's ephemeral range, the same range
// every outgoing connection takes its local port from: under CI load another process's connection
// (to PostgreSQL, between a service and its agents, ...) can take it before the service binds it.
// That happened: sshd refused to listen on the port picked for a tunnel. So these ports come from
// below the ephemeral range, where the kernel never picks on its own, and each test worker takes
// its own slice of it, in turn, so two workers (or two calls in one file) never get the same port.

const SLICES = 4;

function ephemeralRange(): [number, number] {
  try {
    const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8')
      .trim()
      .split(/\s+/)
      .map(Number);
    if (low > 0 && high >= low) return [low, high];
  } catch {
    // not Linux: use Linux's default range
  }
  return [32768, 60999];
}

/** This worker's ports: a slice of [10000, start of the ephemeral range), or of the range above it. */
function slice(): { first: number; size: number } {
  const [low, high] = ephemeralRange();
  const [from, to] = low - 10_000 >= 4 * SLICES ? [10_000, low - 1] : [high + 1, 65_535];
  const size = Math.floor((to - from + 1) / SLICES);
  const pool = Number(process.env.VITEST_POOL_ID ?? '1');
  const index = (Number.isInteger(pool) && pool > 0 ? pool - 1 : process.pid) % SLICES;
  return { first: from + index * size, size };
}

const mine = slice();
let next = Math.floor(Math.random() * mine.size);

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen({ port, host: '127.0.0.1', exclusive: true }, () => server.close(() => resolve(true)));
  });
}

/**
 * A loopback port nothing listens on, outside the kernel's ephemeral range, not handed out before
 * by this test worker (until its slice wraps around).
 */
export async function freePort(): Promise<number> {
  for (let tries = 0; tries < mine.size; tries += 1) {
    const port = mine.first + (next % mine.size);
    next += 1;
    if (await bindable(port)) return port;
  }
  throw new Error(`no free loopback port in ${mine.first}-${mine.first + mine.size - 1}`);
}
