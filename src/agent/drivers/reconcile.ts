import type {
  ApplyContext,
  Driver,
  ServiceResult,
  ServiceSpec,
  ServiceStatus,
  StackRef,
  StartConditionHooks,
} from './driver.js';

/** The error of a service a cancelled (or timed-out) job did not get to. */
export const NOT_REACHED = 'cancelled before this service was applied';

interface Step {
  name: string;
  run: () => Promise<ServiceResult['action']>;
}

/**
 * Brings one stack on this node to exactly `services`, the same way on every driver
 * (docs/drivers.md, "What both drivers share"): the node is listed once; services no longer desired
 * are removed first (in name order), then each desired service is ensured in the given order. A
 * service in `keep` gets the row `kept` and is not touched. Once the signal is aborted every step
 * not yet taken gets a `failed` row with NOT_REACHED and nothing more changes. A step that fails
 * gets a `failed` row with its error and the others go on. `progress(done, total)` follows every row
 * except the ones a cancellation left. Resolves with one row per step, in step order; throws only
 * when the node cannot be listed.
 */
export async function reconcile<Found>(
  driver: Driver<Found>,
  stack: StackRef,
  services: ServiceSpec[],
  ctx: ApplyContext,
): Promise<ServiceResult[]> {
  const found = await driver.list(stack);
  const desired = new Set(services.map((s) => s.name));
  const step = { log: (line: string) => ctx.log(line), signal: ctx.signal };
  /** The rows of the desired services so far, by name: what a dependant's conditions look at. */
  const applied = new Map<string, ServiceResult>();
  const steps: Step[] = [
    // Removals first: a renamed service may need the old one's host port, memory or name.
    ...[...found]
      .filter(([name]) => !desired.has(name))
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([name, what]) => ({
        name,
        run: async () => {
          await driver.remove(stack, name, what, step);
          return 'removed' as const;
        },
      })),
    ...services.map((spec) => ({
      name: spec.name,
      run: async () => {
        const restart = ctx.conditions
          ? await awaitConditions(driver, stack, spec, applied, ctx.conditions, ctx)
          : false;
        const action = await driver.ensure(stack, spec, found.get(spec.name), {
          ...step,
          replace: restart || (ctx.replace?.has(spec.name) ?? false),
        });
        ctx.conditions?.ensured?.(spec.name, action);
        return action;
      },
    })),
  ];
  const results: ServiceResult[] = [];
  for (const { name, run } of steps) {
    if (ctx.keep?.has(name)) results.push(row(name, 'kept'));
    else if (ctx.signal.aborted) {
      results.push({ name, action: 'failed', ok: false, error: NOT_REACHED });
      continue;
    } else results.push(await attempt(name, run, ctx));
    if (desired.has(name)) applied.set(name, results[results.length - 1]);
    ctx.progress?.(results.length, steps.length);
  }
  return results;
}

/** Actions after which a dependency counts as restarted, for a condition with `restart: true`. */
const RESTARTED = new Set<ServiceResult['action']>(['created', 'replaced', 'started']);

/**
 * Waits for what `spec.start_conditions` ask of the dependencies applied before it (docs/drivers.md,
 * "Start conditions"); throws with the reason a required one is not met. Resolves with whether the
 * service is to be replaced because a dependency with `restart: true` was (re)started.
 */
async function awaitConditions<Found>(
  driver: Driver<Found>,
  stack: StackRef,
  spec: ServiceSpec,
  applied: ReadonlyMap<string, ServiceResult>,
  hooks: StartConditionHooks,
  ctx: ApplyContext,
): Promise<boolean> {
  let restart = false;
  for (const condition of spec.start_conditions ?? []) {
    const name = condition.service;
    const dependency = applied.get(name);
    if (!dependency) {
      ctx.log(`${spec.name}: ${name} is not applied before it; its condition is not waited for`);
      continue;
    }
    try {
      if (!dependency.ok) throw new Error(`dependency ${name} failed`);
      if (condition.condition === 'service_healthy') {
        const verdict = await hooks.waitHealthy(name, ctx.signal);
        if (verdict === 'cancelled' || ctx.signal.aborted) throw new Error(NOT_REACHED);
        if (verdict === 'unhealthy') throw new Error(`dependency ${name} is unhealthy`);
        if (verdict === 'none') ctx.log(`${spec.name}: ${name} has no health check; counted as started`);
        else ctx.log(`${spec.name}: ${name} is healthy`);
      } else if (condition.condition === 'service_completed_successfully') {
        await awaitCompleted(driver, stack, name, hooks.pollMs ?? 250, ctx.signal);
        ctx.log(`${spec.name}: ${name} completed successfully`);
      }
      if (condition.restart && RESTARTED.has(dependency.action)) {
        if (!restart) ctx.log(`${spec.name}: ${name} was ${dependency.action}; replacing it too`);
        restart = true;
      }
    } catch (err) {
      if (ctx.signal.aborted) throw new Error(NOT_REACHED, { cause: err });
      if (condition.required) throw err;
      ctx.log(`${spec.name}: ${(err as Error).message}; not required, starting anyway`);
    }
  }
  return restart;
}

/** Until the one-shot `name` has exited: with 0 it resolves, with another code it throws. */
async function awaitCompleted<Found>(
  driver: Driver<Found>,
  stack: StackRef,
  name: string,
  pollMs: number,
  signal: AbortSignal,
): Promise<void> {
  for (;;) {
    if (signal.aborted) throw new Error(NOT_REACHED);
    const status = await statusOf(driver, stack, name);
    if (!status) throw new Error(`dependency ${name} is not there`);
    if (!status.running && status.status === 'exited' && status.exitCode !== null) {
      if (status.exitCode === 0) return;
      throw new Error(`dependency ${name} exited with code ${status.exitCode}`);
    }
    await sleep(pollMs, signal);
  }
}

async function statusOf<Found>(
  driver: Driver<Found>,
  stack: StackRef,
  name: string,
): Promise<ServiceStatus | null> {
  if (driver.status) return driver.status(stack, name);
  const observed = (await driver.observe()).find((o) => o.stackId === stack.id && o.name === name);
  return observed ?? null;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

/** destroyStack's services went, its volumes could not: `results` are the services' rows. */
export class VolumesNotRemovedError extends Error {
  constructor(
    message: string,
    readonly results: ServiceResult[],
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/**
 * Removes every service of the stack from this node (`keep` does not apply: the stack goes). Its
 * volumes stay unless `ctx.deleteVolumes`: then they go once every service is gone (a failed
 * removal or a cancellation keeps them, logged); a volume that cannot be removed throws
 * VolumesNotRemovedError with the services' rows.
 */
export async function destroyStack<Found>(
  driver: Driver<Found>,
  stack: StackRef,
  ctx: ApplyContext,
): Promise<ServiceResult[]> {
  const results = await reconcile(driver, stack, [], { ...ctx, keep: undefined, replace: undefined });
  if (!ctx.deleteVolumes) return results;
  if (ctx.signal.aborted || results.some((r) => !r.ok)) {
    ctx.log('volumes kept: not every service was removed');
    return results;
  }
  try {
    await driver.removeVolumes(stack, { log: (line) => ctx.log(line), signal: ctx.signal });
  } catch (err) {
    const error = err instanceof Error ? err.message : String(err);
    ctx.log(`volumes: failed: ${error}`);
    throw new VolumesNotRemovedError(`volumes: ${error}`, results, { cause: err });
  }
  return results;
}

async function attempt(name: string, run: Step['run'], ctx: ApplyContext): Promise<ServiceResult> {
  try {
    return row(name, await run());
  } catch (err) {
    const error = err instanceof Error ? err.message : String(err);
    ctx.log(`${name}: failed: ${error}`);
    return { name, action: 'failed', ok: false, error };
  }
}

function row(name: string, action: ServiceResult['action']): ServiceResult {
  return { name, action, ok: true, error: '' };
}
