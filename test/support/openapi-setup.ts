// Set up before every e2e file (vitest.config.ts): a test whose requests got an answer the OpenAPI
// document does not describe fails (test/support/openapi-check.ts records them).
import { afterAll, afterEach } from 'vitest';
import { violations } from './openapi-check.js';

const assertNone = (when: string) => {
  if (violations.length === 0) return;
  const found = violations.splice(0);
  throw new Error(`${found.length} answer(s) ${when} differ from docs/openapi.yaml:\n${found.join('\n')}`);
};

afterEach(() => assertNone('in this test'));
// Hooks are stacked: this runs after the file's own afterAll, so answers given then count too.
afterAll(() => assertNone('outside the tests (beforeAll/afterAll)'));
