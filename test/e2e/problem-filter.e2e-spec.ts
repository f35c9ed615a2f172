import { Controller, Get, Module } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { NextFunction, Request, Response } from 'express';
import supertest from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppError } from '../../src/server/common/app-error.js';
import { ProblemFilter } from '../../src/server/common/problem.filter.js';
import { assignRequestId } from '../../src/server/common/request-id.middleware.js';

@Controller('boom')
class BoomController {
  @Get('internal')
  internal(): never {
    throw new Error('password=hunter2 at db.internal:5432 failed');
  }

  @Get('coded')
  coded(): never {
    throw new AppError(409, 'conflict', 'Conflict', 'The stack is being deployed.', undefined, {
      'Retry-After': '3',
    });
  }
}

@Module({ controllers: [BoomController], providers: [{ provide: APP_FILTER, useClass: ProblemFilter }] })
class BoomModule {}

/** The global filter in a real Nest app over HTTP, with handlers that throw. */
describe('ProblemFilter', () => {
  let app: NestExpressApplication;
  beforeAll(async () => {
    app = await NestFactory.create<NestExpressApplication>(BoomModule, { logger: false });
    app.use((req: Request, res: Response, next: NextFunction) => {
      assignRequestId(req, res);
      next();
    });
    await app.init();
  });
  afterAll(() => app.close());

  it('answers an unexpected error with a bare 500 internal: no message, no stack', async () => {
    const res = await supertest(app.getHttpServer()).get('/boom/internal').expect(500);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.body).toMatchObject({
      status: 500,
      code: 'internal',
      title: 'Internal Server Error',
      instance: '/boom/internal',
    });
    expect(res.body.request_id).toBe(res.headers['x-request-id']);
    expect(res.text).not.toMatch(/hunter2|db\.internal|\bat .*\.ts|Error:/);
  });

  it('turns a coded error into its status, code and headers', async () => {
    const res = await supertest(app.getHttpServer()).get('/boom/coded').expect(409);
    expect(res.body).toMatchObject({
      code: 'conflict',
      title: 'Conflict',
      detail: 'The stack is being deployed.',
    });
    expect(res.headers['retry-after']).toBe('3');
  });
});
