import * as z from 'zod/v4';

/** Output of the PromQL tools: the `data` of the Prometheus API's answer (api/prometheus-api.ts). */
const point = z.tuple([z.number(), z.string()]).describe('[unix seconds, value as text]');
const metric = z.record(z.string(), z.string()).describe('The series labels');

export const queryResult = {
  resultType: z.enum(['vector', 'matrix', 'scalar', 'string']),
  result: z.union([
    point,
    z.array(z.object({ metric, value: point })),
    z.array(z.object({ metric, values: z.array(point) })),
  ]),
};
