import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ServiceSpecMsg } from '../contracts/agent-protocol/index.js';
import type { StackRef } from './drivers/driver.js';

/** What this node should run for one stack, kept on disk so a restarted agent restores it. */
export interface StackRecord {
  stack: StackRef;
  revision: number;
  /** The services of the last job that reached this node (env still unresolved). */
  desired: ServiceSpecMsg[];
  /** The services of the last job that succeeded: what cleanup reverts to. */
  applied: ServiceSpecMsg[] | null;
  /** The last job for the stack that finished on this node. */
  lastJobId?: string;
  /** Services whose drift the operator ignores: every apply leaves them as they are. */
  keep?: string[];
  /** Where the stack's containers' output goes (JobCommand.log_push_url); absent: nowhere. */
  logPushUrl?: string;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** One JSON file per stack under DATA_DIR/stacks, written atomically. */
export class DesiredStateStore {
  private readonly dir: string;
  private readonly records = new Map<string, StackRecord>();

  constructor(dataDir: string) {
    this.dir = join(dataDir, 'stacks');
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    for (const file of readdirSync(this.dir)) {
      if (!file.endsWith('.json') || !UUID.test(file.slice(0, -5))) continue;
      try {
        const record = JSON.parse(readFileSync(join(this.dir, file), 'utf8')) as StackRecord;
        this.records.set(record.stack.id, record);
      } catch {
        // a damaged file is dropped; the next job for the stack writes it again
      }
    }
  }

  all(): StackRecord[] {
    return [...this.records.values()];
  }

  get(stackId: string): StackRecord | undefined {
    return this.records.get(stackId);
  }

  save(record: StackRecord): void {
    if (!UUID.test(record.stack.id)) throw new Error('stack id is not a UUID');
    this.records.set(record.stack.id, record);
    const path = join(this.dir, `${record.stack.id}.json`);
    writeFileSync(`${path}.tmp`, JSON.stringify(record), { mode: 0o600 });
    renameSync(`${path}.tmp`, path);
  }

  delete(stackId: string): void {
    this.records.delete(stackId);
    const path = join(this.dir, `${stackId}.json`);
    if (existsSync(path)) rmSync(path, { force: true });
  }
}
