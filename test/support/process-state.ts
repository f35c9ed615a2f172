import { readFileSync } from 'node:fs';

/** Alive and not a zombie: nothing reaps orphaned processes in some containers, and a zombie still has its pid. */
export function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}
