import { Global, Module } from '@nestjs/common';
import { SecretBox } from './secret-box.js';
import { StartupState } from './startup-state.js';

@Global()
@Module({ providers: [StartupState, SecretBox], exports: [StartupState, SecretBox] })
export class CommonModule {}
