import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../config/config.js';

/** Where agents download from and connect to, and what decided it. */
export interface RegistryUrl {
  url: string;
  /** `tunnel`: the running tunnel's public URL; `custom`: a URL the operator set and validated; `config`: PUBLIC_URL. */
  source: 'tunnel' | 'custom' | 'config';
}

/**
 * The registry URL the install commands use. This default knows only PUBLIC_URL; the tunnel module
 * provides a subclass (or `useExisting`) under this class as its token that prefers the running
 * tunnel and the operator's custom URL.
 */
@Injectable()
export class RegistryUrlSource {
  constructor(private readonly config: AppConfig) {}

  registryUrl(): Promise<RegistryUrl> {
    return Promise.resolve({ url: this.config.publicUrl, source: 'config' });
  }
}
