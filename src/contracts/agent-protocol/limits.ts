import type { MetricSampleMsg, OutputLineMsg, ServiceSpecMsg } from './index.js';

/**
 * The limits that make "accepted" mean "can be sent": what a stack definition may hold, and how big
 * a message on the agent channel may be. The definition validator, the gateway, the dispatcher and
 * the agent all take them from here, so they cannot drift apart. docs/stack-definitions.md ("Size
 * limits") and docs/agent-protocol.md ("Message limits") give the reasoning.
 */

/**
 * Largest message either side of the agent channel sends or accepts, set as grpc-js's
 * `max_send_message_length` and `max_receive_message_length` on the gateway and on the agent. A
 * message over it ends the whole stream (RESOURCE_EXHAUSTED), so every producer below keeps well
 * under it.
 */
export const MAX_AGENT_MESSAGE_BYTES = 4 * 1024 * 1024;

/**
 * The services of one stack as a job sends them (the `services` of `JobCommand`, protobuf-encoded,
 * monitoring services included). With the job's other fields a provision command stays under
 * 530 KiB: an eighth of the message limit.
 */
export const MAX_STACK_SPEC_BYTES = 512 * 1024;

/** Environment variables one service may have. */
export const MAX_ENV_PER_SERVICE = 1000;
/** UTF-8 bytes of an environment variable name. */
export const MAX_ENV_NAME_BYTES = 256;
/**
 * UTF-8 bytes of one environment value or command argument: half of Linux's 128 KiB limit on one
 * `execve` string (MAX_ARG_STRLEN), so the process driver can always start what was accepted.
 */
export const MAX_ENV_VALUE_BYTES = 64 * 1024;
export const MAX_COMMAND_ARG_BYTES = 64 * 1024;
/** No variant of the catalogue may allow more services (keep and replace lists, job results). */
export const MAX_SERVICES_PER_STACK = 100;

/**
 * What the agent lets a state report take. Past it the agent sends the largest services' command
 * and environment as digests (`EffectiveConfig.trimmed`); a report still too big leaves whole
 * stacks out, which the service shows as unknown. Half the message limit: the report goes with
 * every heartbeat and the service keeps the latest one of every worker in memory.
 */
export const MAX_STATE_REPORT_BYTES = MAX_AGENT_MESSAGE_BYTES / 2;

/** Job output: characters per line, lines and UTF-8 bytes per `JobEvent`. */
export const MAX_JOB_LINE_CHARS = 4096;
export const MAX_JOB_LINES_PER_EVENT = 1000;
export const MAX_JOB_LINES_BYTES = 256 * 1024;
/** Characters of a job's error and of each service result's error. */
export const MAX_JOB_ERROR_CHARS = 2000;

/**
 * Scrapes (docs/metrics.md, "Stack services"). A response body over MAX_SCRAPE_BYTES, more than
 * MAX_SCRAPE_SAMPLES samples, or a series past the label limits fails the scrape (`up` 0), as
 * Prometheus's `body_size_limit`, `sample_limit` and label limits do. A scrape is sent in parts of
 * at most MAX_SCRAPE_PART_BYTES encoded: with the label limits one sample takes at most about
 * 200 KiB (three-byte characters), so a part always holds at least one.
 */
export const MAX_SCRAPE_BYTES = 10 * 1024 * 1024;
export const MAX_SCRAPE_SAMPLES = 50_000;
export const MAX_SCRAPE_LABELS = 32;
export const MAX_SCRAPE_NAME_CHARS = 256;
export const MAX_SCRAPE_VALUE_CHARS = 2048;
export const MAX_SCRAPE_PART_BYTES = 1024 * 1024;

/**
 * Service output (docs/stack-logs.md): characters per line, lines and UTF-8 bytes per
 * `ServiceOutput`; the service refuses a message over MAX_OUTPUT_LINES_PER_MESSAGE lines.
 */
export const MAX_OUTPUT_LINE_CHARS = 4096;
export const MAX_OUTPUT_LINES_PER_MESSAGE = 1000;
export const MAX_OUTPUT_BYTES_PER_MESSAGE = 256 * 1024;

// ---- protobuf wire sizes (proto3, as grpc-js and protobufjs encode `agent.proto`) ----

const varintBytes = (n: number): number => {
  if (n < 0) return 10; // a negative int64 takes all ten bytes
  let bytes = 1;
  for (let rest = n; rest >= 0x80; rest = Math.floor(rest / 0x80)) bytes++;
  return bytes;
};

export const utf8Bytes = (text: string): number => Buffer.byteLength(text, 'utf8');

/** A length-delimited field (string, message, map entry); every field here has a one-byte tag. */
const delimited = (length: number): number => 1 + varintBytes(length) + length;
const text = (value: string): number => delimited(utf8Bytes(value));
const uint = (value: number): number => 1 + varintBytes(value);

/** The encoded size of one `ServiceSpec`, every field counted even when it holds its default. */
export function serviceSpecBytes(spec: ServiceSpecMsg): number {
  let bytes = text(spec.name) + text(spec.image) + text(spec.restart) + text(spec.digest);
  for (const arg of spec.command) bytes += text(arg);
  for (const [name, value] of Object.entries(spec.env)) bytes += delimited(text(name) + text(value));
  for (const p of spec.ports) bytes += delimited(uint(p.container) + uint(p.host) + text(p.protocol));
  bytes += 1 + 8; // cpu, a double
  bytes += uint(spec.memory_bytes);
  const check = spec.health_check;
  if (check) bytes += delimited(text(check.path) + uint(check.port) + uint(check.interval_ms));
  const metrics = spec.metrics;
  if (metrics) bytes += delimited(uint(metrics.port) + text(metrics.path) + uint(metrics.interval_ms));
  for (const f of spec.files ?? []) bytes += delimited(text(f.path) + text(f.content) + uint(f.mode));
  return bytes;
}

/** What a stack's services add to a `JobCommand`: the number MAX_STACK_SPEC_BYTES bounds. */
export function stackSpecBytes(specs: ServiceSpecMsg[]): number {
  return specs.reduce((sum, spec) => sum + delimited(serviceSpecBytes(spec)), 0);
}

/** What one sample adds to a `ScrapeReport` (its field 4 entry, tag and length included). */
export function scrapeSampleBytes(sample: MetricSampleMsg): number {
  let bytes = 1 + 8 + uint(sample.timestamp_ms); // value (a double), timestamp
  for (const label of sample.labels) bytes += delimited(text(label.name) + text(label.value));
  return delimited(bytes);
}

/** What one line adds to a `ServiceOutput` (its field 1 entry). */
export function outputLineBytes(line: OutputLineMsg): number {
  return delimited(
    text(line.stack_id) + text(line.service) + uint(line.time_ms) + text(line.stream) + text(line.line),
  );
}
