/*
 * What cloudflared's log says about the tunnel. cloudflared logs to stderr through zerolog's console
 * writer: `<RFC 3339 time> <LVL> <message> <key>=<value> ...`, values with spaces in double quotes.
 * The lines this reads (from cloudflared's source: quick_tunnel.go, connection/control.go,
 * supervisor/supervisor.go):
 *
 *   INF |  https://seasonal-deck-organisms-sf.trycloudflare.com                                 |
 *   INF Registered tunnel connection connIndex=0 connection=<uuid> event=0 ip=198.41.192.7 location=ams01 protocol=quic
 *   ERR Connection terminated error="timeout: no recent network activity" connIndex=0
 *   INF Unregistered tunnel connection connIndex=0 event=0 ip=198.41.192.7
 *
 * The quick tunnel URL is taken only from its box line: error lines name api.trycloudflare.com too.
 */

export type CloudflaredEvent =
  /** The quick tunnel's public URL (printed once, before any connection registers). */
  | { kind: 'url'; url: string }
  /** One of the connections to Cloudflare's edge is up: the tunnel carries traffic. */
  | { kind: 'registered'; connIndex: number }
  /** One connection is gone; cloudflared retries it by itself. */
  | { kind: 'lost'; connIndex: number; error?: string }
  /** Something went wrong; the newest such line is the best reason to give when the tunnel ends. */
  | { kind: 'error'; message: string };

const LINE = /^\S+\s+(TRC|DBG|INF|WRN|ERR|FTL|PNC)\s+(.*)$/;
const BOX_URL = /^\|\s+(https:\/\/[a-z0-9-]+\.trycloudflare\.com)\s+\|$/;
// Colours appear when stderr is a terminal; a pipe normally gets none, but a wrapper script may add them.
// eslint-disable-next-line no-control-regex
const ANSI = /\x1b\[[0-9;]*m/g;
const MAX_REASON = 300;

/** The value of `key=value` or `key="quoted value"` among a line's fields. */
export function field(text: string, key: string): string | undefined {
  const match = new RegExp(`(?:^|\\s)${key}=(?:"((?:[^"\\\\]|\\\\.)*)"|(\\S*))`).exec(text);
  if (!match) return undefined;
  return match[1] !== undefined ? match[1].replace(/\\(.)/g, '$1') : match[2];
}

function connIndex(text: string): number {
  const value = Number(field(text, 'connIndex'));
  return Number.isInteger(value) ? value : 0;
}

const clip = (text: string): string => (text.length > MAX_REASON ? `${text.slice(0, MAX_REASON)}...` : text);

/** One line of cloudflared's output, or undefined when it says nothing this provider acts on. */
export function parseCloudflaredLine(raw: string): CloudflaredEvent | undefined {
  const line = raw.replace(ANSI, '').trim();
  if (line === '') return undefined;
  const match = LINE.exec(line);
  if (!match) {
    // Unstructured text is what cloudflared prints last when it gives up ("failed to request quick
    // Tunnel: ..."), or a Go panic.
    return { kind: 'error', message: clip(line) };
  }
  const [, level, text] = match as unknown as [string, string, string];
  const url = BOX_URL.exec(text);
  if (url?.[1]) return { kind: 'url', url: url[1] };
  // "Unregistered" contains "registered": the prefix test keeps them apart.
  if (text.startsWith('Registered tunnel connection'))
    return { kind: 'registered', connIndex: connIndex(text) };
  if (text.startsWith('Unregistered tunnel connection') || text.startsWith('Connection terminated')) {
    const error = field(text, 'error');
    return { kind: 'lost', connIndex: connIndex(text), ...(error ? { error: clip(error) } : {}) };
  }
  if (level === 'ERR' || level === 'FTL' || level === 'PNC') return { kind: 'error', message: clip(text) };
  return undefined;
}
