import { Module } from '@nestjs/common';
import { OpenApiController } from './openapi.controller.js';
import { OpenApiDocumentService } from './openapi-document.service.js';

@Module({
  controllers: [OpenApiController],
  providers: [OpenApiDocumentService],
})
export class OpenApiModule {}
