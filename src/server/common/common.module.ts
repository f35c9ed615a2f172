import { Global, Module } from '@nestjs/common';
import { Leases } from './leases.js';
import { MemoryTrimmer } from './memory-trim.js';
import { SecretBox } from './secret-box.js';
import { StartupState } from './startup-state.js';

@Global()
@Module({
  providers: [StartupState, SecretBox, Leases, MemoryTrimmer],
  exports: [StartupState, SecretBox, Leases],
})
export class CommonModule {}
