import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { load } from 'js-yaml';
import { describe, expect, it } from 'vitest';
import { generateOpenApiDocument } from './write.js';

const root = new URL('../../../', import.meta.url);

describe('the committed OpenAPI document', () => {
  it('is what the code generates (npm run openapi writes it), without a database', async () => {
    const committed = load(readFileSync(new URL('docs/openapi.yaml', root), 'utf8'));
    // JSON round trip: the generated document may hold undefined fields the YAML cannot.
    const generated: unknown = JSON.parse(JSON.stringify(await generateOpenApiDocument()));
    expect(generated).toEqual(committed);
  });

  it('has the schemas of the current contracts (scripts/contract-schemas.mjs)', () => {
    // Exits 1 with a message when src/server/openapi/contract-schemas.json is out of date.
    expect(() =>
      execFileSync(process.execPath, ['scripts/contract-schemas.mjs', '--check'], {
        cwd: root,
        stdio: 'pipe',
      }),
    ).not.toThrow();
  });
});
