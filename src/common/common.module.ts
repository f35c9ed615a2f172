import { Global, Module } from '@nestjs/common';
import { StartupState } from './startup-state.js';

@Global()
@Module({ providers: [StartupState], exports: [StartupState] })
export class CommonModule {}
