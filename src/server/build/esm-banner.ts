// Build time only: shared by the bundles esbuild makes (the agent's, the service's).

/**
 * An ES module has no require, __filename or __dirname; the CommonJS packages in a bundle (grpc-js,
 * protobufjs, dockerode, pino, ...) use all three. Each output file of a bundle starts with this.
 */
export const ESM_BANNER = [
  "import { createRequire as __bundleCreateRequire } from 'node:module';",
  "import { fileURLToPath as __bundleFileURLToPath } from 'node:url';",
  "import { dirname as __bundleDirname } from 'node:path';",
  'const require = __bundleCreateRequire(import.meta.url);',
  'const __filename = __bundleFileURLToPath(import.meta.url);',
  'const __dirname = __bundleDirname(__filename);',
].join('\n');
