// Loader hooks of loaded-modules.mjs (they run on the loader's own thread).
import { appendFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

let file;

export function initialize(data) {
  file = data.file;
}

export async function load(url, context, next) {
  if (url.startsWith('file:')) appendFileSync(file, `${fileURLToPath(url)}\n`);
  return next(url, context);
}
