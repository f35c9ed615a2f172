import { Module } from '@nestjs/common';
import { UnifierController } from '../unifier.controller.js';
import { DefinitionService } from './definition.service.js';

@Module({
  controllers: [UnifierController],
  providers: [DefinitionService],
  exports: [DefinitionService],
})
export class DefinitionModule {}
