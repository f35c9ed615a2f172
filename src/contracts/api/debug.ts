// `GET .../orchestrator/debug/bundle`: a gzip-compressed tar archive (docs/operations.md, "The debug
// bundle"). These are the shapes of its manifest.json; the other entries are described there.
import type { Timestamp } from './common.js';

/** The archive's entries, in archive order. */
export type DebugBundleEntryName =
  | 'manifest.json'
  | 'logs/service.jsonl'
  | 'config.json'
  | 'workers.json'
  | 'jobs.json'
  | 'metrics.txt'
  | 'system.json';

/** One entry of the archive besides the manifest itself. */
export interface DebugBundleEntry {
  name: DebugBundleEntryName;
  /** Bytes, exactly as in the archive. */
  size: number;
  sha256: string;
  description: string;
  /** Whether something was left out of it; `cuts` says what and why. */
  truncated: boolean;
}

/** Something left out of an entry, and why. */
export interface DebugBundleCut {
  entry: DebugBundleEntryName;
  /** `size_cap`, `older_than_window`, `limit`, `log_tail`, ... */
  reason: string;
  detail: string;
  lines?: number;
  bytes?: number;
  items?: number;
}

/** A replica of the service seen alive while the bundle was made, and how it was seen. */
export interface DebugBundleReplica {
  /** The replica's id (`hostname/pid/random`), as the leases and agent_sessions tables name it. */
  id: string;
  /** Agents whose stream it holds (its agent_sessions rows, while it renews its liveness row). */
  agent_sessions: number;
  /** Leases it holds now (`tunnel`, `worker-sweep`, ...). */
  leases: string[];
  /** Its latest own-metrics scrape in the metric store (every METRICS_SCRAPE_INTERVAL). */
  last_self_scrape: Timestamp | null;
}

export interface LogFileRead {
  name: string;
  /** Its size when the bundle started; lines written after that are left for the next bundle. */
  bytes: number;
  /** False when none of it could be in the bundle: older than the window, or beyond the cap. */
  read: boolean;
}

/** What was left out of the logs, and why. */
export interface LogCuts {
  /** Lines of the window that did not fit the cap: the oldest ones go. */
  size_cap: { lines: number; bytes: number };
  /** Lines older than the window in files that also hold newer ones. */
  older_than_window: { lines: number; bytes: number };
  /** Whole files last written before the window. */
  files_older_than_window: { files: number; bytes: number };
  /** Whole files older than lines that already filled the cap: not read at all. */
  files_beyond_cap: { files: number; bytes: number };
  /** Lines without a readable `time` (not written by the service's logger). */
  unparseable: { lines: number; bytes: number };
  /** Files rotated away between the two passes over them. */
  files_vanished: number;
}

/** logs/service.jsonl: which replica's logs, which window, and what was cut. */
export interface LogTail {
  since: Timestamp;
  until: Timestamp;
  cap_bytes: number;
  files: LogFileRead[];
  lines: number;
  bytes: number;
  oldest_line_time: Timestamp | null;
  newest_line_time: Timestamp | null;
  truncated: boolean;
  cut: LogCuts;
}

export interface DebugBundleManifest {
  bundle_version: 1;
  created_at: Timestamp;
  file_name: string;
  service: { name: string; version: string };
  /** The replica that made the bundle: its logs, metrics and system figures are the ones inside. */
  replica: DebugBundleReplica;
  /** The other replicas seen alive: ask each of them for its own bundle for their logs. */
  other_replicas: DebugBundleReplica[];
  logs: LogTail & { replica: string };
  entries: DebugBundleEntry[];
  cuts: DebugBundleCut[];
}
