import { randomUUID } from 'node:crypto';
import type { Pool, PoolClient } from 'pg';
import { DataSource } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { textArray, uuidArray } from '../../src/server/database/array-literals.js';
import { startTestApp, type TestApp } from '../support/app.js';

// Hot statements go to the database as named statements, prepared once per connection
// (src/server/database/prepared-statements.ts). One pool connection, so every statement of the
// test runs on the session whose prepared statements it reads.

const STACK = `
name: prepared
stackkit: basement-kit
variant: default
services:
  web:
    command: ["/bin/true"]
`;

describe('prepared hot statements', () => {
  let t: TestApp;
  let pool: Pool;
  let id: string;
  beforeAll(async () => {
    t = await startTestApp({ env: { DATABASE_POOL_SIZE: '1' } });
    pool = (t.app.get(DataSource).driver as PostgresDriver).master as Pool;
  });
  afterAll(() => t.close());

  const preparedOnSession = async (client?: PoolClient): Promise<string[]> => {
    const rows = await (client ?? pool).query<{ statement: string }>(
      'SELECT statement FROM pg_prepared_statements',
    );
    return rows.rows.map((r) => r.statement);
  };

  it('reads a stack through a named statement, and answers as before', async () => {
    const auth = await t.adminAuth();
    const created = await t.http
      .post('/api/v1/orchestrator/stacks')
      .set('Authorization', auth)
      .set('Content-Type', 'application/yaml')
      .send(STACK)
      .expect(201);
    id = created.body.id as string;
    for (let i = 0; i < 2; i++) {
      const res = await t.http
        .get(`/api/v1/orchestrator/stacks/${id}`)
        .set('Authorization', auth)
        .expect(200);
      expect(res.body).toMatchObject({ id, name: 'prepared' });
    }
    const statements = await preparedOnSession();
    expect(statements.some((s) => s.includes('WHERE s.id = $1 AND s.owner = $2'))).toBe(true);
    // What is not marked stays unnamed: nothing prepared mentions the clients table.
    expect(statements.some((s) => s.includes('FROM "clients"') || s.includes('FROM clients'))).toBe(false);
  });

  it('a new connection prepares its statements again, even where sessions share one backend', async () => {
    const auth = await t.adminAuth();
    // Close the pool's connection outright: the next request opens another one. On the embedded
    // database both reach the one PGlite session, which still holds the first one's statements.
    const client = await pool.connect();
    client.release(true);
    await t.http.get(`/api/v1/orchestrator/stacks/${id}`).set('Authorization', auth).expect(200);
    await t.http.get(`/api/v1/orchestrator/stacks/${id}`).set('Authorization', auth).expect(200);
    expect((await preparedOnSession()).some((s) => s.includes('WHERE s.id = $1 AND s.owner = $2'))).toBe(
      true,
    );
  });

  it('array parameters built as literals (database/array-literals.ts) read back as the values given', async () => {
    const texts = ['plain', 'NULL', 'a,b', 'say "hi"', 'back\\slash', '{braces}', '', 'ünï', 'plain'];
    const ids = [randomUUID(), randomUUID().toUpperCase()];
    const [row] = await t.app
      .get(DataSource)
      .query<{ texts: string[]; ids: string[] }[]>('SELECT $1::text[] AS texts, $2::uuid[] AS ids', [
        textArray(texts),
        uuidArray(ids),
      ]);
    expect(row.texts).toEqual(texts);
    expect(row.ids).toEqual(ids.map((id) => id.toLowerCase()));
  });
});
