// The framework baseline: a bare NestJS + Express application with one route, nothing else (no
// guards, interceptors, logging or metrics), answering GET /api/v1/orchestrator/info with a body
// of the same shape the service sends. Plain JavaScript, so the decorators are applied by hand.
import 'reflect-metadata';
import { Controller, Get, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';

class InfoController {
  info() {
    return { name: 'stack-orchestrator', version: '0.0.0', api_version: 'v1', node: process.version };
  }
}
Controller('api/v1/orchestrator')(InfoController);
Get('info')(
  InfoController.prototype,
  'info',
  Object.getOwnPropertyDescriptor(InfoController.prototype, 'info'),
);

class AppModule {}
Module({ controllers: [InfoController] })(AppModule);

const app = await NestFactory.create(AppModule, { logger: false });
await app.listen(Number(process.env.PORT), process.env.HOST ?? '127.0.0.1');
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
