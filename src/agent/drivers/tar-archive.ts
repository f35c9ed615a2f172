/**
 * A minimal POSIX ustar archive of regular files, for the Docker Engine API's
 * `PUT /containers/{id}/archive` (how the docker driver puts a service's files into its container).
 * Entries are owned by root; the engine creates missing parent directories (0755).
 */
export interface ArchiveFile {
  /** Absolute path inside the container. */
  path: string;
  content: string;
  mode: number;
}

const BLOCK = 512;

export function tarArchive(files: readonly ArchiveFile[], mtime = new Date()): Buffer {
  const parts: Buffer[] = [];
  for (const file of files) {
    const body = Buffer.from(file.content, 'utf8');
    parts.push(header(file.path.replace(/^\/+/, ''), body.length, file.mode, mtime));
    parts.push(body, Buffer.alloc((BLOCK - (body.length % BLOCK)) % BLOCK));
  }
  parts.push(Buffer.alloc(2 * BLOCK));
  return Buffer.concat(parts);
}

function header(path: string, size: number, mode: number, mtime: Date): Buffer {
  const [prefix, name] = splitPath(path);
  const h = Buffer.alloc(BLOCK);
  const text = (value: string, offset: number, length: number) => {
    h.write(value, offset, length, 'utf8');
  };
  const octal = (value: number, offset: number, length: number) =>
    text(`${value.toString(8).padStart(length - 1, '0')}\0`, offset, length);
  text(name, 0, 100);
  octal(mode & 0o7777, 100, 8);
  octal(0, 108, 8); // uid
  octal(0, 116, 8); // gid
  octal(size, 124, 12);
  octal(Math.floor(mtime.getTime() / 1000), 136, 12);
  h.fill(' ', 148, 156); // the checksum counts itself as spaces
  text('0', 156, 1); // a regular file
  text('ustar\0', 257, 6);
  text('00', 263, 2);
  text('root', 265, 32);
  text('root', 297, 32);
  text(prefix, 345, 155);
  let sum = 0;
  for (const byte of h) sum += byte;
  text(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 8);
  return h;
}

/** ustar keeps names up to 100 bytes, and a directory prefix up to 155 before them. */
function splitPath(path: string): [string, string] {
  if (Buffer.byteLength(path) <= 100) return ['', path];
  for (let i = path.lastIndexOf('/'); i > 0; i = path.lastIndexOf('/', i - 1)) {
    const prefix = path.slice(0, i);
    const name = path.slice(i + 1);
    if (Buffer.byteLength(prefix) <= 155 && Buffer.byteLength(name) <= 100) return [prefix, name];
  }
  throw new Error(`path too long for a tar entry: ${path}`);
}
