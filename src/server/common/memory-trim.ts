import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { InjectMetric } from '@willsoto/nestjs-prometheus';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type { Counter } from 'prom-client';
import { AppConfig } from '../config/config.js';
import { METRIC } from '../metrics/metric-names.js';
import { firstThenEvery } from './periodic.js';

/** The addon `scripts/build-native.mjs` compiles from `native/malloc-trim.c`. */
export interface NativeTrim {
  /** Whether the process's allocator is glibc's (else `trim` does nothing and resolves false). */
  readonly supported: boolean;
  /** malloc_trim(0) on the libuv pool; true when memory was given back. */
  trim(): Promise<boolean>;
}

/** Where `npm run build` puts the addon: the same path from `src/` (tests) and from `dist/`. */
export const NATIVE_TRIM_PATH = new URL('../../../dist/native/malloc-trim.node', import.meta.url);

/** Loads the addon, or says why it cannot be used. */
export function loadNativeTrim(path: URL = NATIVE_TRIM_PATH): NativeTrim | { unavailable: string } {
  let addon: NativeTrim;
  try {
    addon = createRequire(import.meta.url)(fileURLToPath(path)) as NativeTrim;
  } catch (err) {
    return { unavailable: `the addon did not load (${(err as Error).message.split('\n')[0]})` };
  }
  return addon.supported ? addon : { unavailable: 'the allocator is not glibc' };
}

/** The first trim after start: start-up's compilers have freed their working memory by then. */
export const FIRST_TRIM_AFTER_MS = 5000;

/**
 * Gives the memory glibc's allocator holds free back to the system, 5 s after start and then every
 * MEMORY_TRIM_INTERVAL. Without it an idle service keeps what V8's compiler threads freed after
 * start-up (60-110 MiB on the embedded database, whose PostgreSQL is WebAssembly compiled at start)
 * in their malloc arenas for good. A trim takes a few milliseconds on a libuv pool thread.
 */
@Injectable()
export class MemoryTrimmer implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('MemoryTrimmer');
  private timers: NodeJS.Timeout[] = [];

  constructor(
    private readonly config: AppConfig,
    @InjectMetric(METRIC.memoryTrims) private readonly trims: Counter<string>,
  ) {}

  onApplicationBootstrap(): void {
    const intervalMs = this.config.memoryTrimIntervalMs;
    if (intervalMs === 0) return;
    const addon = loadNativeTrim();
    if ('unavailable' in addon) {
      this.logger.log(`Idle memory is not given back to the system: ${addon.unavailable}`);
      return;
    }
    const trim = async (): Promise<void> => {
      const released = await addon.trim();
      this.trims.inc({ released: String(released) });
    };
    this.timers = firstThenEvery(this.logger, 'memory-trim', FIRST_TRIM_AFTER_MS, intervalMs, trim);
  }

  onModuleDestroy(): void {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers = [];
  }
}
