import type { ServiceSpec } from '../../src/agent/drivers/driver.js';
import { TEST_IMAGE } from './podman.js';

/** A container of the test image with nothing published, no limits and no check; `overrides` win. */
export const containerSpec = (name: string, overrides: Partial<ServiceSpec> = {}): ServiceSpec => ({
  name,
  image: TEST_IMAGE,
  command: ['sleep', '3600'],
  env: {},
  ports: [],
  cpu: 0,
  memory_bytes: 0,
  restart: 'on-failure',
  health_check: null,
  digest: `sha256:${name}-1`,
  ...overrides,
});
