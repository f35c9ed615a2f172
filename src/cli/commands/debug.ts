import { open, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import type { ApiClient } from '../api.js';
import type { Command } from '../args.js';
import { CliError } from '../errors.js';
import { attachmentName } from '../http.js';
import { clean, printJson } from '../output.js';
import { DEBUG_BUNDLE } from './shared.js';

const BUNDLE_TYPE = 'application/gzip';
/** Used only when the server names no usable file. */
const FALLBACK_NAME = 'debug-bundle.tar.gz';

/** stackctl debug …: the debug bundle, streamed to a file. */
export async function runDebug(
  api: ApiClient,
  command: Extract<Command, { name: `debug ${string}` }>,
  json: boolean,
): Promise<void> {
  switch (command.name) {
    case 'debug bundle': {
      const saved = await saveBundle(api, command.output);
      if (json) return printJson({ path: saved.path, size: saved.size, file_name: saved.fileName });
      console.log(`Wrote ${clean(saved.path)} (${saved.size} bytes).`);
      return;
    }
  }
}

/**
 * Streams the archive into a new file, readable by its owner only (it holds logs and the
 * configuration): -o FILE, or the server's file name in the current directory. An existing file is
 * never overwritten, and a download that breaks off leaves no partial file.
 */
async function saveBundle(
  api: ApiClient,
  output: string | undefined,
): Promise<{ path: string; size: number; fileName: string }> {
  // -o is opened first: a file in the way fails before the service makes (and audits) a bundle.
  let path = output;
  let file = path === undefined ? undefined : await createNew(path);
  try {
    const download = await api.download(DEBUG_BUNDLE, BUNDLE_TYPE);
    const type = download.headers.get('content-type') ?? '';
    if (type.split(';')[0].trim() !== BUNDLE_TYPE) {
      download.cancel();
      throw new CliError(`the service answered ${type || 'no content type'} instead of ${BUNDLE_TYPE}.`);
    }
    const fileName = attachmentName(download.headers.get('content-disposition')) ?? FALLBACK_NAME;
    if (file === undefined) {
      path = join(process.cwd(), fileName);
      try {
        file = await createNew(path);
      } catch (err) {
        download.cancel();
        throw err;
      }
    }
    let size = 0;
    for await (const chunk of download.chunks) {
      await file.write(chunk);
      size += chunk.length;
    }
    await file.close();
    file = undefined;
    return { path: path!, size, fileName };
  } catch (err) {
    if (file !== undefined) {
      await file.close().catch(() => undefined);
      await unlink(path!).catch(() => undefined);
    }
    throw err;
  }
}

async function createNew(path: string): Promise<FileHandle> {
  try {
    return await open(path, 'wx', 0o600);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') throw new CliError(`${path} exists; give -o a new file name.`);
    throw new CliError(`cannot create ${path}: ${code ?? (err as Error).message}.`);
  }
}
