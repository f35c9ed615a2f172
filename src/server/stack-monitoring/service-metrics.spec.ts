import { describe, expect, it } from 'vitest';
import { MetricInputError } from '../metric-store/errors.js';
import { labelsKey } from '../metric-store/labels.js';
import { scrapedLabels, targetLabels } from './service-metrics.js';

const stack = { id: '6b0f3d52-3a51-4f0e-9d0c-3e1f0d1b2a40', owner: 'acme', name: 'shop' };
const WORKER = '0f5e8a7c-1d2b-4c3a-9e8f-7a6b5c4d3e2f';
const target = targetLabels(stack, 'web', WORKER, 9100);

describe('labels of a scraped sample', () => {
  it('adds the target labels: stack name and id, service, worker, job and instance', () => {
    expect(target).toEqual({
      stack: 'shop',
      stack_id: stack.id,
      service: 'web',
      worker_id: WORKER,
      job: 'shop/web',
      instance: `${WORKER}:9100`,
    });
    const labels = scrapedLabels(
      [
        { name: '__name__', value: 'hits_total' },
        { name: 'path', value: '/a' },
      ],
      target,
    );
    expect(labelsKey(labels)).toBe(
      `{__name__="hits_total", instance="${WORKER}:9100", job="shop/web", path="/a", service="web", stack="shop", stack_id="${stack.id}", worker_id="${WORKER}"}`,
    );
  });

  it("keeps the endpoint's own labels of those names as exported_<name>, and drops empty ones", () => {
    const labels = scrapedLabels(
      [
        { name: '__name__', value: 'm' },
        { name: 'job', value: 'node' },
        { name: 'instance', value: 'x:1' },
        { name: 'stack', value: 'other' },
        { name: 'empty', value: '' },
      ],
      target,
    );
    const byName = Object.fromEntries(labels.map((l) => [l.name, l.value]));
    expect(byName).toMatchObject({
      job: 'shop/web',
      exported_job: 'node',
      instance: `${WORKER}:9100`,
      exported_instance: 'x:1',
      stack: 'shop',
      exported_stack: 'other',
    });
    expect(byName.empty).toBeUndefined();
  });

  it('refuses what the store would: no metric name, a bad name, a duplicate', () => {
    expect(() => scrapedLabels([{ name: 'path', value: '/' }], target)).toThrow(MetricInputError);
    expect(() => scrapedLabels([{ name: '__name__', value: '1bad' }], target)).toThrow(/invalid metric name/);
    expect(() =>
      scrapedLabels(
        [
          { name: '__name__', value: 'm' },
          { name: 'a', value: '1' },
          { name: 'a', value: '2' },
        ],
        target,
      ),
    ).toThrow(/duplicate label name "a"/);
  });
});
