// `GET .../stacks/:id/logs`: the output lines of a stack's services (docs/stack-logs.md).
import type { Timestamp } from './common.js';

export interface StackLogsQuery {
  /** Only this service's lines. */
  service?: string;
  /** RFC 3339 time, or a duration back from now (`15m`, `2h`): lines at or after it. */
  since?: string;
  /** RFC 3339 time, or a duration back from now: lines before it. Not with `follow`. */
  until?: string;
  /** The newest lines that match, at most this many (1-10,000; default 100). */
  limit?: number;
  /** Keep the response open and stream new lines (NDJSON, or server-sent events). */
  follow?: boolean;
}

export type StackLogStream = 'stdout' | 'stderr' | 'agent';

/** One line; also each NDJSON line (or SSE `data`) of a followed stream. */
export interface StackLogLine {
  /** When the agent read it. */
  time: Timestamp;
  service: string;
  worker_id: string;
  /** `agent` marks notes of the agent's own (lines it had to drop). */
  stream: StackLogStream;
  line: string;
}

export interface StackLogPage {
  stack_id: string;
  /** Oldest first. */
  lines: StackLogLine[];
  /** More lines matched than `limit`: the older ones were left out (narrow `until` to read them). */
  truncated: boolean;
}
