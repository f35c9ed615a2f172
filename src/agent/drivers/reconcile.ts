import type { ApplyContext, Driver, ServiceResult, ServiceSpec, StackRef } from './driver.js';

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
      run: () =>
        driver.ensure(stack, spec, found.get(spec.name), {
          ...step,
          replace: ctx.replace?.has(spec.name) ?? false,
        }),
    })),
  ];
  const results: ServiceResult[] = [];
  for (const { name, run } of steps) {
    if (ctx.keep?.has(name)) results.push(row(name, 'kept'));
    else if (ctx.signal.aborted) {
      results.push({ name, action: 'failed', ok: false, error: NOT_REACHED });
      continue;
    } else results.push(await attempt(name, run, ctx));
    ctx.progress?.(results.length, steps.length);
  }
  return results;
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
