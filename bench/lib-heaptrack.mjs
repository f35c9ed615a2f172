// Native memory by allocation site (issue 18, item 4): a process started with heaptrack's preload
// library (Debian `heaptrack`) records every malloc with its native call stack; killed with SIGKILL
// while its connections are up, what it still held is what heaptrack calls leaked. Divided by the
// connections, that is the native memory each one holds, by the function that allocated it. These
// are allocated bytes: a buffer's pages that were never written are not resident, so a site can show
// more here than the process's RSS grows by (Node's 64 KiB TLS read buffer, mostly unwritten).
import { execFileSync, spawn } from 'node:child_process';
import { createReadStream, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const PRELOAD = '/usr/lib/heaptrack/libheaptrack_preload.so';
const INTERPRET = '/usr/lib/heaptrack/libexec/heaptrack_interpret';

/**
 * Starts heaptrack's interpreter on a fifo; `env` goes to the traced process, `done` resolves with
 * the recording (gzip) once that process has exited.
 */
export function heaptrackRecorder(file) {
  if (!existsSync(PRELOAD) || !existsSync(INTERPRET))
    throw new Error('heaptrack is not installed (apt-get install -y heaptrack)');
  const dir = mkdtempSync(join(tmpdir(), 'so-bench-heaptrack-'));
  const fifo = join(dir, 'fifo');
  execFileSync('mkfifo', [fifo]);
  const child = spawn('sh', ['-c', `"${INTERPRET}" < "${fifo}" | gzip -1 > "${file}"`], { stdio: 'inherit' });
  const done = new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', () => {
      rmSync(dir, { recursive: true, force: true });
      resolve(file);
    });
  });
  return { env: { LD_PRELOAD: PRELOAD, DUMP_HEAPTRACK_OUTPUT: fifo }, done };
}

/** Frames that only pass an allocation on: the site is the first frame past them. */
const WRAPPERS = new Set([
  'malloc',
  'calloc',
  'realloc',
  'operator new(unsigned long)',
  'operator new[](unsigned long)',
  'CRYPTO_malloc',
  'CRYPTO_zalloc',
  'CRYPTO_realloc',
  'CRYPTO_clear_realloc',
  'OPENSSL_sk_push',
  'BUF_MEM_grow',
  'BUF_MEM_grow_clean',
]);

/** Who owns a site, from its function's name. */
export function ownerOf(site) {
  if (site.startsWith('node::crypto::NodeBIO')) return "Node's TLS record buffers (NodeBIO)";
  if (site.startsWith('node::http2::')) return "Node's HTTP/2 session and stream objects";
  if (/NgLibMemoryManager|^nghttp2/.test(site)) return 'nghttp2 (HTTP/2 state, frame buffer, HPACK)';
  if (/ArrayBufferAllocator|BackingStore|ArrayBuffer/.test(site)) return 'Buffers and array buffers (JS)';
  if (/^(node::crypto::TLSWrap|node::TCPWrap|node::(LibuvStreamWrap|StreamBase|BaseObject))/.test(site))
    return "Node's TCP and TLS handles";
  if (/^(v8::|node::)/.test(site)) return 'V8 and Node, other';
  if (
    /^(SSL|ssl|tls|EVP|evp|BN|bn|ASN1|asn1|X509|x509|EC|ec|ossl|OPENSSL|CRYPTO|BIO|aes|sha|bytes_to)/.test(
      site,
    )
  )
    return 'OpenSSL (connection, session, peer certificate)';
  return 'other';
}

/**
 * What the recording's process still held when it ended, per connection: by owner, and the top
 * sites. `n` is the number of connections it held.
 */
export async function heldBySite(file, n, top = 12) {
  const dir = mkdtempSync(join(tmpdir(), 'so-bench-heaptrack-print-'));
  try {
    const stacks = join(dir, 'stacks.txt');
    execFileSync('heaptrack_print', ['-f', file, '-F', stacks, '--flamegraph-cost-type', 'leaked'], {
      stdio: ['ignore', 'ignore', 'ignore'],
      maxBuffer: 1 << 30,
    });
    const bySite = new Map();
    let total = 0;
    // Read line by line: a service's file runs to gigabytes.
    for await (const line of createInterface({ input: createReadStream(stacks), crlfDelay: Infinity })) {
      const at = line.lastIndexOf(' ');
      if (at < 0) continue;
      const cost = Number(line.slice(at + 1));
      if (!(cost > 0)) continue;
      // Root first, ';' between frames, each maybe followed by ' (file.c)'.
      const frames = line
        .slice(0, at)
        .replace(/;$/, '')
        .split(';')
        .map((f) => f.replace(/ \([^()]*\)$/, ''))
        .reverse();
      const site = frames.find((f) => !WRAPPERS.has(f)) ?? frames[0];
      bySite.set(site, (bySite.get(site) ?? 0) + cost);
      total += cost;
    }
    const byOwner = new Map();
    for (const [site, cost] of bySite) byOwner.set(ownerOf(site), (byOwner.get(ownerOf(site)) ?? 0) + cost);
    const per = (bytes) => bytes / n / 1024;
    return {
      total: per(total),
      owners: [...byOwner].sort((a, b) => b[1] - a[1]).map(([owner, cost]) => [owner, per(cost)]),
      sites: [...bySite]
        .sort((a, b) => b[1] - a[1])
        .slice(0, top)
        .map(([site, cost]) => [site, ownerOf(site), per(cost)]),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
