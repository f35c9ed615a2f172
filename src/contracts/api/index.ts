// The HTTP API's JSON shapes, one file per resource: types only, importing nothing outside
// src/contracts (ESLint holds both). The service's controllers and view functions return them,
// stackctl reads them (docs/architecture.md, "Contracts").
export type * from './common.js';
export type * from './page.js';
export type * from './problem.js';
export type * from './oauth.js';
export type * from './clients.js';
export type * from './keys.js';
export type * from './join-tokens.js';
export type * from './workers.js';
export type * from './stack-definition.js';
export type * from './stacks.js';
export type * from './jobs.js';
export type * from './drift.js';
export type * from './settings.js';
export type * from './audit.js';
export type * from './orchestrator.js';
export type * from './tunnel.js';
export type * from './debug.js';
export type * from './stack-logs.js';
export type * from './prometheus.js';
export type * from './probes.js';
export type * from './well-known.js';
export type * from './mcp.js';
