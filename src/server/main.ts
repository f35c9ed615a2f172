#!/usr/bin/env node
import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import type { Server } from 'node:http';
import { startApp } from './bootstrap.js';
import { ConfigError, loadConfig } from './config/config.js';

/** Before the logger exists, a fatal start-up problem is still one JSON line. */
function fatal(component: string, msg: string): never {
  process.stdout.write(
    `${JSON.stringify({ time: new Date().toISOString(), level: 'FATAL', msg, component })}\n`,
  );
  process.exit(1);
}

let config;
try {
  config = loadConfig();
} catch (err) {
  if (err instanceof ConfigError) fatal('config', err.message);
  throw err;
}

const logger = new Logger('main');
let app;
try {
  app = await startApp(config);
} catch (err) {
  fatal('main', `start-up failed: ${(err as Error).message}`);
}
logger.log(
  {
    port: config.port,
    agent_port: config.agentPort,
    public_url: config.publicUrl,
    console_url: `${config.publicUrl}/console`,
  },
  'service started',
);

let stopping = false;
const shutdown = async (signal: NodeJS.Signals): Promise<void> => {
  if (stopping) return;
  stopping = true;
  logger.log({ signal }, 'shutting down: no new connections, finishing requests in flight');
  const server: Server = app.getHttpServer();
  const force = setTimeout(() => {
    logger.warn({ timeout_ms: config.shutdownTimeoutMs }, 'grace period over: closing remaining connections');
    server.closeAllConnections();
  }, config.shutdownTimeoutMs);
  force.unref();
  // A keep-alive connection whose request just finished would otherwise linger for keepAliveTimeout.
  const sweep = setInterval(() => server.closeIdleConnections(), 250);
  sweep.unref();
  try {
    await app.close();
    logger.log('stopped');
    process.exit(0);
  } catch (err) {
    logger.error({ err }, 'shutdown failed');
    process.exit(1);
  }
};
process.once('SIGTERM', (signal) => void shutdown(signal));
process.once('SIGINT', (signal) => void shutdown(signal));
