import { readFileSync } from 'node:fs';

interface PackageJson {
  name: string;
  version: string;
}

// src/server/common and dist/server/common both sit three levels below the package root.
const pkg = JSON.parse(
  readFileSync(new URL('../../../package.json', import.meta.url), 'utf8'),
) as PackageJson;

export const SERVICE_NAME = pkg.name;
export const SERVICE_VERSION = pkg.version;
