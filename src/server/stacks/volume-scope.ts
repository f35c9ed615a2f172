import { createHash } from 'node:crypto';

/**
 * What a stack's volumes are named by on its worker (`so-<scope>_<volume>`, docs/compose.md,
 * "Volumes"): the first 12 hex digits of sha256(owner, NUL, stack name). A stack destroyed without
 * its volumes and made again under the same name by the same owner finds them, as Compose's
 * `<project>_<volume>` does; another owner's stack of that name never does.
 */
export function volumeScope(owner: string, stackName: string): string {
  return createHash('sha256').update(`${owner}\0${stackName}`).digest('hex').slice(0, 12);
}
