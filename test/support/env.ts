/** Which database the e2e run uses: `postgres` (a real server) or `pglite` (embedded). */
export type TestDb = 'postgres' | 'pglite';

export function testDb(): TestDb {
  const value = process.env.TEST_DB ?? 'pglite';
  if (value !== 'postgres' && value !== 'pglite')
    throw new Error(`TEST_DB must be postgres or pglite, not ${value}`);
  return value;
}

/** The server the postgres run creates its databases on (trust auth on this machine). */
export const POSTGRES_ADMIN_URL =
  process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
