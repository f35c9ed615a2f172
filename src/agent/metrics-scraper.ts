import type {
  AgentMessage,
  LabelMsg,
  MetricSampleMsg,
  MetricsSpecMsg,
  ScrapeReportMsg,
} from '../contracts/agent-protocol/index.js';
import {
  MAX_SCRAPE_BYTES,
  MAX_SCRAPE_LABELS,
  MAX_SCRAPE_NAME_CHARS,
  MAX_SCRAPE_PART_BYTES,
  MAX_SCRAPE_SAMPLES,
  MAX_SCRAPE_VALUE_CHARS,
  scrapeSampleBytes,
} from '../contracts/agent-protocol/limits.js';
import { readExposition, quoteForMessage } from '../contracts/exposition.js';
import { ServiceLoops, type ServiceLoop } from './service-loops.js';

/** Prometheus's default scrape timeout; a shorter interval is the timeout instead. */
const MAX_TIMEOUT_MS = 10_000;
/** What Prometheus 2.x asks for when it does not negotiate OpenMetrics. */
const ACCEPT = 'text/plain;version=0.0.4;q=0.9,*/*;q=0.1';
/** Beyond any sane clock: the same bound the service's store keeps (2^52 ms). */
const MAX_ABS_TIMESTAMP = 2 ** 52;

type Target = ServiceLoop<MetricsSpecMsg>;

/** Why a scrape did not count (the agent logs it; the service sees `up` 0). */
export class ScrapeError extends Error {
  override name = 'ScrapeError';
}

/**
 * The samples of an exposition, held to the scrape limits (limits.ts): a series with too many
 * labels, too long a name or value, a repeated label, or more samples than the limit fail the
 * whole scrape, as Prometheus's label and sample limits do.
 */
export function readScrape(text: string): MetricSampleMsg[] {
  const samples: MetricSampleMsg[] = [];
  readExposition(
    text,
    {
      sample: (name, labels, value, timestamp, line) => {
        if (samples.length >= MAX_SCRAPE_SAMPLES)
          throw new ScrapeError(`more than ${MAX_SCRAPE_SAMPLES} samples`);
        if (labels.length + 1 > MAX_SCRAPE_LABELS)
          throw new ScrapeError(`line ${line}: more than ${MAX_SCRAPE_LABELS} labels`);
        const all: LabelMsg[] = [{ name: '__name__', value: name }, ...labels];
        const seen = new Set<string>();
        for (const label of all) {
          if (seen.has(label.name))
            throw new ScrapeError(`line ${line}: duplicate label name ${quoteForMessage(label.name)}`);
          seen.add(label.name);
          if (label.name.length > MAX_SCRAPE_NAME_CHARS || label.value.length > MAX_SCRAPE_VALUE_CHARS)
            throw new ScrapeError(`line ${line}: label ${quoteForMessage(label.name)} is too long`);
        }
        samples.push({ labels: all, value, timestamp_ms: timestamp ?? 0 });
      },
    },
    { maxLineLength: MAX_SCRAPE_BYTES, maxAbsTimestamp: MAX_ABS_TIMESTAMP },
  );
  return samples;
}

/**
 * A scrape as `ScrapeReport`s of at most MAX_SCRAPE_PART_BYTES of samples each, the outcome on the
 * last one. A scrape without samples (or a failed one) is one part.
 */
export function scrapeParts(
  outcome: Omit<ScrapeReportMsg, 'samples' | 'last'>,
  samples: MetricSampleMsg[],
): ScrapeReportMsg[] {
  const parts: ScrapeReportMsg[] = [];
  let current: MetricSampleMsg[] = [];
  let bytes = 0;
  for (const sample of samples) {
    const size = scrapeSampleBytes(sample);
    if (current.length > 0 && bytes + size > MAX_SCRAPE_PART_BYTES) {
      parts.push({ ...outcome, samples: current, last: false });
      current = [];
      bytes = 0;
    }
    current.push(sample);
    bytes += size;
  }
  parts.push({ ...outcome, samples: current, last: true });
  return parts;
}

/** The response body, refused past `limit` bytes without reading the rest. */
async function readCapped(res: Response, limit: number): Promise<string> {
  if (!res.body) return '';
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > limit) {
      await reader.cancel();
      throw new ScrapeError(`the response is larger than ${limit} bytes`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Scrapes the metrics endpoint each service of the node declares (`ServiceSpec.metrics`) at its
 * interval, on 127.0.0.1, and sends each scrape to the service as `ScrapeReport`s: the samples and
 * whether the target was up. A scrape taken while no stream is up is dropped.
 */
export class MetricsScraper {
  private readonly targets = new ServiceLoops<MetricsSpecMsg, Target>({
    create: (stackId, name, spec) => ({ stackId, name, spec }),
    run: (target) => this.scrape(target),
    intervalMs: (spec) => Math.max(1000, spec.interval_ms),
    same: (a, b) => a.port === b.port && a.path === b.path && a.interval_ms === b.interval_ms,
  });

  constructor(
    private readonly send: (message: AgentMessage) => boolean,
    private readonly warn: (fields: Record<string, unknown>, msg: string) => void,
  ) {}

  /** The targets of one stack's services (name -> endpoint); the stack's others stop. */
  setStack(stackId: string, specs: Map<string, MetricsSpecMsg>): void {
    this.targets.setStack(stackId, specs);
  }

  removeStack(stackId: string): void {
    this.targets.removeStack(stackId);
  }

  close(): void {
    this.targets.close();
  }

  /** One scrape of one target, sent; never throws. */
  async scrape(target: Target): Promise<void> {
    const { port, path, interval_ms } = target.spec;
    const at = Date.now();
    const started = performance.now();
    let samples: MetricSampleMsg[];
    let up = false;
    try {
      const res = await fetch(`http://127.0.0.1:${port}${path}`, {
        headers: { accept: ACCEPT },
        redirect: 'manual',
        signal: AbortSignal.timeout(Math.min(MAX_TIMEOUT_MS, Math.max(1000, interval_ms))),
      });
      if (res.status !== 200) {
        await res.body?.cancel();
        throw new ScrapeError(`HTTP status ${res.status}`);
      }
      samples = readScrape(await readCapped(res, MAX_SCRAPE_BYTES));
      up = true;
    } catch (err) {
      samples = [];
      this.failed(target, (err as Error).message);
    }
    const outcome = {
      stack_id: target.stackId,
      service: target.name,
      timestamp_ms: at,
      up,
      duration_seconds: (performance.now() - started) / 1000,
      samples_scraped: samples.length,
      port,
    };
    for (const part of scrapeParts(outcome, samples)) if (!this.send({ scrape: part })) return;
    if (up) this.lastError.delete(`${target.stackId}/${target.name}`);
  }

  /** Why each target last failed: logged when it changes, not at every interval. */
  private readonly lastError = new Map<string, string>();

  private failed(target: Target, error: string): void {
    const key = `${target.stackId}/${target.name}`;
    const reason = error.slice(0, 200);
    if (this.lastError.get(key) === reason) return;
    if (this.lastError.size >= 10_000) this.lastError.clear();
    this.lastError.set(key, reason);
    this.warn(
      { stack_id: target.stackId, service: target.name, port: target.spec.port, err: reason },
      'metrics scrape failed',
    );
  }
}
