import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The repository (or image) root: the nearest directory above `moduleUrl` holding a package.json.
 * The same from src/ under vitest and from dist/, and unchanged when folders move.
 */
export function packageRoot(moduleUrl: string): string {
  const start = dirname(fileURLToPath(moduleUrl));
  for (let dir = start; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    if (dirname(dir) === dir) throw new Error(`no package.json above ${start}`);
  }
}
