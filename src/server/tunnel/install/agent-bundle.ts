import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { AppError } from '../../common/app-error.js';
import { packageRoot } from './package-root.js';

/** Where `npm run build` writes the bundled agent (build-agent-bundle.ts). */
export const defaultAgentBundlePath = (): string =>
  join(packageRoot(import.meta.url), 'dist/downloads/stack-agent.mjs');

/** The service has no bundled agent to offer: built without it, or the file cannot be read. */
export class AgentBundleUnavailableError extends AppError {
  constructor() {
    super(
      503,
      'agent_bundle_unavailable',
      'Service Unavailable',
      'The agent download is missing or unreadable on this instance (npm run build makes dist/downloads/stack-agent.mjs).',
    );
  }
}

export interface AgentBundleFile {
  bytes: Buffer;
  /** Lower-case hex SHA-256 of `bytes`: what the install commands pin and the ETag. */
  sha256: string;
}

/**
 * The bundled agent, read once: the bytes served and the digest the commands carry are always the
 * same file, even if a build replaces it while the service runs. A missing file is not remembered,
 * so a bundle built after start is found.
 */
export class AgentBundle {
  private loading: Promise<AgentBundleFile> | undefined;

  constructor(private readonly path: string = defaultAgentBundlePath()) {}

  load(): Promise<AgentBundleFile> {
    this.loading ??= readFile(this.path).then(
      (bytes) => ({ bytes, sha256: createHash('sha256').update(bytes).digest('hex') }),
      () => {
        this.loading = undefined;
        throw new AgentBundleUnavailableError();
      },
    );
    return this.loading;
  }
}
