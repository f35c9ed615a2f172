import type { NestExpressApplication } from '@nestjs/platform-express';
import type { AddressInfo } from 'node:net';
import supertest from 'supertest';
import { startApp } from '../../src/bootstrap.js';
import { AppConfig } from '../../src/config/config.js';
import { createTestDatabase, type TestDatabase } from './database.js';
import { LogCapture } from './log-capture.js';

export interface TestApp {
  app: NestExpressApplication;
  /** Base URL of the running HTTP listener. */
  url: string;
  http: ReturnType<typeof supertest>;
  logs: LogCapture;
  db: TestDatabase;
  env: Record<string, string>;
  /** Closes the app; keeps the database unless `drop` is true. */
  close(options?: { drop?: boolean }): Promise<void>;
}

/** The environment a test app runs with: loopback, a free port, its own DATA_DIR and database. */
export function testEnv(db: TestDatabase, extra: Record<string, string> = {}): Record<string, string> {
  return {
    HOST: '127.0.0.1',
    PORT: '0',
    DATA_DIR: db.dataDir,
    ...(db.databaseUrl ? { DATABASE_URL: db.databaseUrl } : {}),
    ...extra,
  };
}

/** Starts the whole application in this process on the given (or a new) test database. */
export async function startTestApp(
  options: { env?: Record<string, string>; db?: TestDatabase } = {},
): Promise<TestApp> {
  const db = options.db ?? (await createTestDatabase());
  const env = testEnv(db, options.env);
  const logs = new LogCapture();
  const app = await startApp(new AppConfig(env), { logConsole: logs });
  const { port } = app.getHttpServer().address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;
  return {
    app,
    url,
    http: supertest(url),
    logs,
    db,
    env,
    close: async ({ drop = true } = {}) => {
      await app.close();
      if (drop) await db.drop();
    },
  };
}

/** Polls `fn` until it returns true or the time runs out. */
export async function eventually(
  fn: () => Promise<boolean> | boolean,
  timeoutMs = 15_000,
  stepMs = 100,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await fn()) return;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, stepMs));
  }
}
