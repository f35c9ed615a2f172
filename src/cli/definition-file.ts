import { closeSync, openSync, readSync } from 'node:fs';
import { UsageError } from './errors.js';

/** A stack definition file as read from disk, before anything is sent. */
export interface DefinitionFile {
  path: string;
  data: Uint8Array;
}

/** The largest definition file stackctl sends: the service reads no larger request body. */
export const MAX_DEFINITION_BYTES = 1024 * 1024;

/**
 * The definition file `--file` names, read before anything is sent: a missing option, a file that
 * cannot be read or one larger than the service accepts is a command line error. Read in bounded
 * chunks, so a pipe (`--file <(...)`) works and a huge file is not read whole.
 */
export function readDefinition(command: string, path: string | undefined): DefinitionFile {
  if (path === undefined || path === '') throw new UsageError(`"${command}" needs --file PATH.`);
  const shown = JSON.stringify(path);
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (err) {
    throw new UsageError(`cannot read --file ${shown}: ${describeFsError(err)}.`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for (;;) {
      const chunk = Buffer.allocUnsafe(64 * 1024);
      const read = readSync(fd, chunk, 0, chunk.length, null);
      if (read === 0) break;
      chunks.push(chunk.subarray(0, read));
      size += read;
      if (size > MAX_DEFINITION_BYTES)
        throw new UsageError(
          `--file ${shown} is larger than 1 MiB (${MAX_DEFINITION_BYTES} bytes), the most the service accepts.`,
        );
    }
  } catch (err) {
    if (err instanceof UsageError) throw err;
    throw new UsageError(`cannot read --file ${shown}: ${describeFsError(err)}.`);
  } finally {
    closeSync(fd);
  }
  return { path, data: Buffer.concat(chunks, size) };
}

/** A file system error without the path Node puts in its message: "no such file or directory". */
function describeFsError(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const reason = /^[A-Z]+: ([^,]+)/.exec(err.message)?.[1];
  const code = (err as Error & { code?: unknown }).code;
  if (reason !== undefined) return reason;
  return typeof code === 'string' ? code : err.message;
}
