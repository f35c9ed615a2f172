import { chmodSync, lstatSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/**
 * What the service and the agent keep in their data directories (the embedded database and its
 * WAL, keys, identities, logs) is for their own user only. Both programs create files with these
 * modes explicitly, so the umask they were started with does not matter.
 */
export const PRIVATE_FILE_MODE = 0o600;
export const PRIVATE_DIR_MODE = 0o700;

/**
 * Creates `dir` (and missing parents) as 0700, and makes an existing one 0700 (mkdir leaves an
 * existing directory as it was). A directory another user owns, such as a volume mounted
 * group-writable for us, cannot be changed and is left as it is: what the program puts in it is
 * private on its own.
 */
export function makePrivateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  try {
    chmodSync(dir, PRIVATE_DIR_MODE);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') throw err;
  }
}

/**
 * The repair at start, for data directories older versions left readable (and writable) by all:
 * makes `dir` 0700 and takes the group and other bits off each of `entries` (names in `dir`, the
 * ones the program writes) and everything under them. Returns how many files and directories it
 * changed. Only the program's own entries are walked, so a data directory pointed at a directory
 * that holds other things leaves those alone.
 */
export function repairDataDir(dir: string, entries: readonly string[]): number {
  makePrivateDir(dir);
  return entries.reduce((changed, name) => changed + restrictTree(join(dir, name)), 0);
}

/**
 * Takes the group and other bits off `root` and everything under it; returns how many entries it
 * changed. Symbolic links are neither changed nor followed (chmod would act on their target, which
 * may be outside the directory).
 */
export function restrictTree(root: string): number {
  let changed = 0;
  const visit = (path: string): void => {
    let stat;
    try {
      stat = lstatSync(path);
    } catch (err) {
      // Removed between readdir and lstat (a log rotated away): nothing left to restrict.
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw err;
    }
    if (!stat.isDirectory() && !stat.isFile()) return;
    if (stat.mode & 0o077) {
      chmodSync(path, stat.mode & 0o700);
      changed++;
    }
    if (stat.isDirectory()) for (const name of readdirSync(path)) visit(join(path, name));
  };
  visit(root);
  return changed;
}
