import { open } from 'node:fs/promises';
import type { JoinTokenSource } from './args.js';
import { UsageError } from './errors.js';

/** A join token is about 70 characters; a file this long holds something else. */
const MAX_TOKEN_BYTES = 4096;

/**
 * The join token from where the command line said, trimmed. The text read is never echoed: a
 * file or pipe given by mistake may hold another secret.
 */
export async function readJoinToken(source: JoinTokenSource): Promise<string> {
  let text: string;
  let where: string;
  switch (source.from) {
    case 'env':
      text = source.value;
      where = 'STACKCTL_JOIN_TOKEN';
      break;
    case 'stdin':
      where = 'standard input';
      text = await readStdin();
      break;
    case 'file':
      where = `--token-file ${JSON.stringify(source.path)}`;
      text = await readFile(source.path, where);
      break;
  }
  const token = text.trim();
  if (token === '' || /\s/.test(token))
    throw new UsageError(`${where} must hold the join token and nothing else.`);
  return token;
}

async function readFile(path: string, where: string): Promise<string> {
  try {
    const file = await open(path, 'r');
    try {
      const buffer = Buffer.alloc(MAX_TOKEN_BYTES + 1);
      let size = 0;
      // A pipe (--token-file <(...)) may deliver the bytes in several reads.
      for (;;) {
        const { bytesRead } = await file.read(buffer, size, buffer.length - size, null);
        if (bytesRead === 0) break;
        size += bytesRead;
        if (size > MAX_TOKEN_BYTES) throw tooLong(where);
      }
      return buffer.subarray(0, size).toString('utf8');
    } finally {
      await file.close();
    }
  } catch (err) {
    if (err instanceof UsageError) throw err;
    const code = (err as NodeJS.ErrnoException).code;
    throw new UsageError(`cannot read ${where}: ${typeof code === 'string' ? code : String(err)}.`);
  }
}

async function readStdin(): Promise<string> {
  if (process.stdin.isTTY) console.error('Reading the join token from standard input (end with Ctrl-D).');
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of process.stdin as AsyncIterable<Buffer>) {
    chunks.push(chunk);
    size += chunk.length;
    if (size > MAX_TOKEN_BYTES) {
      process.stdin.destroy();
      throw tooLong('standard input');
    }
  }
  return Buffer.concat(chunks).toString('utf8');
}

const tooLong = (where: string) =>
  new UsageError(
    `${where} holds more than ${MAX_TOKEN_BYTES} bytes: it must hold the join token and nothing else.`,
  );
