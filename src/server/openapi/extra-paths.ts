import type { PathsObject } from '@nestjs/swagger';
import { contractRef } from './contract-schemas.js';

/**
 * Routes answered ahead of Nest, which @nestjs/swagger cannot see: liveness is answered by the
 * HTTP server's own listener (health/liveness.ts) so that it holds while everything else is busy.
 */
export function extraPaths(): PathsObject {
  const live = (summary: string, body: boolean) => ({
    operationId: body ? 'health_live' : 'health_liveHead',
    summary,
    description: 'No access token needed. Answered by the HTTP server itself, ahead of the application.',
    tags: ['Health'],
    security: [],
    responses: {
      200: {
        description: 'The process runs (always, while it does).',
        ...(body ? { content: { 'application/json': { schema: contractRef('ProbeResult') } } } : {}),
      },
    },
  });
  return {
    '/health/live': {
      get: live('Liveness probe', true),
      head: live('Liveness probe, without the body', false),
    },
  };
}
