import type { NestExpressApplication } from '@nestjs/platform-express';
import type { AddressInfo } from 'node:net';
import supertest from 'supertest';
import { startApp } from '../../src/server/bootstrap.js';
import { AppConfig } from '../../src/server/config/config.js';
import { createTestDatabase, type TestDatabase } from './database.js';
import { LogCapture } from './log-capture.js';
import { OpenApiDocumentService } from '../../src/server/openapi/openapi-document.service.js';
import { OpenApiCheck, type OpenApiDocument } from './openapi-check.js';
import type { RequestHandler } from 'express';

/** The bootstrap admin every test app gets (owner `default`, scope `admin`). */
export const ADMIN = { clientId: 'test-admin', secret: 'test-admin-secret-0123456789' };

export interface TokenPair {
  access_token: string;
  refresh_token: string;
  expires_in: number;
  scope: string;
  token_type: string;
}

export interface TestApp {
  app: NestExpressApplication;
  /** What holds this app's answers to the OpenAPI document. */
  openapi: OpenApiCheck;
  /** Base URL of the running HTTP listener. */
  url: string;
  http: ReturnType<typeof supertest>;
  logs: LogCapture;
  db: TestDatabase;
  env: Record<string, string>;
  /** A token pair by client credentials (JSON body); the bootstrap admin's by default. */
  token(client?: { clientId: string; secret: string }, scope?: string): Promise<TokenPair>;
  /** `Bearer <admin access token>`, fetched once. */
  adminAuth(): Promise<string>;
  /** Closes the app; keeps the database unless `drop` is true. */
  close(options?: { drop?: boolean }): Promise<void>;
}

/** The environment a test app runs with: loopback, a free port, its own DATA_DIR and database. */
export function testEnv(db: TestDatabase, extra: Record<string, string> = {}): Record<string, string> {
  return {
    HOST: '127.0.0.1',
    PORT: '0',
    AGENT_PORT: '0',
    // Agents dial PUBLIC_URL's host; the gateway advertises the port it bound.
    PUBLIC_URL: 'http://127.0.0.1',
    // Tests never send traffic off loopback: no public STUN servers unless a test runs its own.
    TUNNEL_STUN_SERVERS: 'none',
    DATA_DIR: db.dataDir,
    BOOTSTRAP_CLIENT_ID: ADMIN.clientId,
    BOOTSTRAP_CLIENT_SECRET: ADMIN.secret,
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
  // Every answer is held to the OpenAPI document (openapi-check.ts); the check exists once the app does.
  const openapi: { check?: OpenApiCheck } = {};
  const observe: RequestHandler = (req, res, next) =>
    openapi.check ? openapi.check.middleware(req, res, next) : next();
  const app = await startApp(new AppConfig(env), { logConsole: logs, middleware: [observe] });
  const check = openApiCheck(app);
  openapi.check = check;
  const { port } = app.getHttpServer().address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;
  const http = supertest(url);
  let admin: string | undefined;
  const token = async (client = ADMIN, scope?: string): Promise<TokenPair> => {
    const res = await http.post('/oauth/token').send({
      grant_type: 'client_credentials',
      client_id: client.clientId,
      client_secret: client.secret,
      ...(scope ? { scope } : {}),
    });
    if (res.status !== 200) throw new Error(`token request failed: ${res.status} ${res.text}`);
    return res.body as TokenPair;
  };
  return {
    app,
    openapi: check,
    url,
    http,
    logs,
    db,
    env,
    token,
    adminAuth: async () => (admin ??= `Bearer ${(await token()).access_token}`),
    close: async ({ drop = true } = {}) => {
      await app.close();
      if (drop) await db.drop();
    },
  };
}

/** One check per test file: every app of this code has the same document. */
let sharedCheck: OpenApiCheck | undefined;
function openApiCheck(app: NestExpressApplication): OpenApiCheck {
  sharedCheck ??= new OpenApiCheck(JSON.parse(app.get(OpenApiDocumentService).json()) as OpenApiDocument);
  return sharedCheck;
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
