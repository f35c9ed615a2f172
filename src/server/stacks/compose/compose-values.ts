/**
 * The value syntaxes of Compose files, read the way `docker compose` (compose-go) reads them:
 * Go durations, byte sizes, command strings split into words, and the short forms of ports and
 * volumes. Pure functions: each returns the value, or a reason (a string) when the text is not
 * of its form. Reasons never repeat the text (it may hold a secret).
 */

/** Go's time.ParseDuration units, as compose-go takes `interval: 1m30s`. */
const DURATION_UNITS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

/** A Go duration (`1m30s`, `500ms`, `2h`) in milliseconds; a bare number is seconds (Compose's int form). */
export function parseDuration(value: unknown): number | string {
  if (typeof value === 'number') {
    return Number.isFinite(value) && value >= 0 ? value * 1000 : 'a duration is not negative';
  }
  if (typeof value !== 'string') return 'a duration is text such as 10s, 1m30s or 500ms';
  const text = value.trim();
  if (text === '0') return 0;
  const part = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)/y;
  let total = 0;
  let at = 0;
  while (at < text.length) {
    part.lastIndex = at;
    const match = part.exec(text);
    if (match === null)
      return 'a duration is a number with a unit (ns, us, ms, s, m, h), such as 10s or 1m30s';
    total += Number(match[1]) * DURATION_UNITS[match[2]];
    at = part.lastIndex;
  }
  if (text.length === 0) return 'a duration must not be empty';
  return Math.round(total);
}

const BYTE_UNITS: Record<string, number> = { '': 1, b: 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3, t: 1024 ** 4 };

/** Compose's byte sizes (`512m`, `1g`, `64M`, `2gb`, a number of bytes): binary multiples, as docker's units.RAMInBytes. */
export function parseBytes(value: unknown): number | string {
  if (typeof value === 'number') {
    return Number.isSafeInteger(value) && value >= 0 ? value : 'a size is a whole number of bytes';
  }
  if (typeof value !== 'string') return 'a size is a number of bytes or text such as 512m or 1g';
  const match = /^\s*(\d+(?:\.\d+)?)\s*([bkmgt]?)(?:i?b)?\s*$/i.exec(value);
  if (match === null)
    return 'a size is a number with an optional unit b, k, m, g or t (binary), such as 512m';
  const bytes = Math.round(Number(match[1]) * BYTE_UNITS[match[2].toLowerCase()]);
  return Number.isSafeInteger(bytes) ? bytes : 'the size is too large';
}

/**
 * A command string split into words as compose-go splits `command: "npm run start"` (go-shellwords):
 * blanks separate words, single quotes keep everything, double quotes keep all but `\` before
 * `"`, `\`, `$` and a backquote, a backslash outside quotes escapes the next character. Nothing is
 * expanded and nothing runs in a shell: `|` or `&&` are words like any other.
 */
export function splitCommand(text: string): string[] | string {
  const words: string[] = [];
  let word = '';
  let inWord = false;
  let quote: "'" | '"' | null = null;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quote === "'") {
      if (c === "'") quote = null;
      else word += c;
      continue;
    }
    if (quote === '"') {
      if (c === '"') quote = null;
      else if (c === '\\' && i + 1 < text.length && '"\\$`'.includes(text[i + 1])) word += text[++i];
      else word += c;
      continue;
    }
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
      continue;
    }
    inWord = true;
    if (c === "'" || c === '"') quote = c;
    else if (c === '\\') {
      if (i + 1 < text.length) word += text[++i];
    } else word += c;
  }
  if (quote !== null) return `an unterminated ${quote === '"' ? 'double' : 'single'} quote`;
  if (inWord) words.push(word);
  return words;
}

export interface PortSpecText {
  address?: string;
  /** Host ports, one per container port; empty: the engine picks them. */
  hosts: number[];
  containers: number[];
  protocol: string;
}

const MAX_RANGE = 100;

function range(text: string): number[] | string {
  const match = /^(\d{1,5})(?:-(\d{1,5}))?$/.exec(text);
  if (match === null) return 'a port is a number from 1 to 65535, or a range such as 8000-8010';
  const from = Number(match[1]);
  const to = match[2] === undefined ? from : Number(match[2]);
  if (from < 1 || to > 65535 || to < from) return 'a port is a number from 1 to 65535, or a range low-high';
  if (to - from + 1 > MAX_RANGE) return `a port range may hold at most ${MAX_RANGE} ports`;
  return Array.from({ length: to - from + 1 }, (_, i) => from + i);
}

/** The short port syntax: `[[address:]host[-range]:]container[-range][/protocol]`. */
export function parsePortText(text: string): PortSpecText | string {
  let rest = text.trim();
  let protocol = 'tcp';
  const slash = rest.lastIndexOf('/');
  if (slash >= 0) {
    protocol = rest.slice(slash + 1);
    rest = rest.slice(0, slash);
  }
  let address: string | undefined;
  const bracketed = /^\[([0-9A-Fa-f:.]+)\]:(.*)$/.exec(rest);
  if (bracketed) {
    address = bracketed[1];
    rest = bracketed[2];
  }
  const parts = rest.split(':');
  if (address === undefined && parts.length === 3) {
    address = parts.shift();
  }
  if (parts.length > 2 || parts.some((p) => p === '')) {
    return 'a port is "[address:][host:]container[/protocol]", such as "8080:80" or "127.0.0.1:8080:80/udp"';
  }
  const containers = range(parts[parts.length - 1]);
  if (typeof containers === 'string') return containers;
  let hosts: number[] = [];
  if (parts.length === 2) {
    const h = range(parts[0]);
    if (typeof h === 'string') return h;
    if (h.length !== containers.length) {
      return 'a host port range must be as long as its container port range';
    }
    hosts = h;
  }
  return { ...(address !== undefined ? { address } : {}), hosts, containers, protocol };
}

export interface VolumeText {
  /** Named volume, host path (absolute, relative or ~), or empty for an anonymous volume. */
  source: string;
  target: string;
  readOnly: boolean;
  /** Mode words other than ro/rw (z, Z, nocopy, propagation): reported by the caller. */
  options: string[];
}

/** The short volume syntax: `[source:]target[:mode]`. */
export function parseVolumeText(text: string): VolumeText | string {
  const parts = text.split(':');
  // A Windows drive letter would add a colon; not a path on the nodes we run.
  if (parts.length === 1) return { source: '', target: parts[0], readOnly: false, options: [] };
  if (parts.length > 3) return 'a volume is "[source:]target[:mode]", such as "data:/var/lib/data:ro"';
  const [source, target, mode = ''] = parts;
  if (source === '' || target === '') return 'a volume is "[source:]target[:mode]" with neither part empty';
  const words = mode === '' ? [] : mode.split(',');
  return {
    source,
    target,
    readOnly: words.includes('ro'),
    options: words.filter((w) => w !== 'ro' && w !== 'rw'),
  };
}

/** A named volume's name as Compose accepts it (the engine's rule). */
export const VOLUME_NAME = /^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/;

/** Where a volume source is a path on the host rather than a volume name. */
export function isHostPath(source: string): boolean {
  return source.startsWith('/') || source.startsWith('.') || source.startsWith('~');
}
