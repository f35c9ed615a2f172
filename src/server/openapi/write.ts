import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import type { OpenAPIObject } from '@nestjs/swagger';
import { Writable } from 'node:stream';
import { pathToFileURL } from 'node:url';
import { AppModule } from '../app.module.js';
import { AppConfig } from '../config/config.js';
import { buildOpenApiDocument } from './document.js';
import { toYaml } from './openapi-document.service.js';

/**
 * The document without a running service: a preview application (Nest instantiates no provider,
 * so nothing opens a database, a port or a file) scanned like the running one.
 */
export async function generateOpenApiDocument(): Promise<OpenAPIObject> {
  const discard = new Writable({ write: (_chunk, _encoding, done) => done() });
  const app = await NestFactory.create(AppModule.forRoot(new AppConfig({}), discard), {
    preview: true,
    logger: false,
    bodyParser: false,
    abortOnError: false,
  });
  try {
    return buildOpenApiDocument(app);
  } finally {
    await app.close();
  }
}

/** `node dist/server/openapi/write.js [--json] > docs/openapi.yaml` (npm run openapi). */
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const document = await generateOpenApiDocument();
  process.stdout.write(
    process.argv.includes('--json') ? `${JSON.stringify(document, null, 2)}\n` : toYaml(document),
  );
}
