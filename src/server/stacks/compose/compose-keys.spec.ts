import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import * as keys from './compose-keys.js';

const DOC = readFileSync(new URL('../../../../docs/compose.md', import.meta.url), 'utf8');
const CLASS = { honoured: 'honoured', refused: 'refused', no_effect: 'without effect' } as const;

describe('docs/compose.md', () => {
  const tables = {
    TOP_LEVEL_KEYS: keys.TOP_LEVEL_KEYS,
    SERVICE_KEYS: keys.SERVICE_KEYS,
    DEPLOY_KEYS: keys.DEPLOY_KEYS,
    VOLUME_KEYS: keys.VOLUME_KEYS,
    NETWORK_KEYS: keys.NETWORK_KEYS,
    FILE_OBJECT_KEYS: keys.FILE_OBJECT_KEYS,
  };
  it.each(Object.entries(tables))('lists every key of %s in its class', (_name, table) => {
    for (const [key, kind] of Object.entries(table)) {
      const row = new RegExp(`^\\| \`${key}\` +\\| ${CLASS[kind.class]} +\\|`, 'm');
      expect(DOC, key).toMatch(row);
    }
  });
});
