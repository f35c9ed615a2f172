import { readFileSync } from 'node:fs';

interface PackageJson {
  name: string;
  version: string;
}

// src/common and dist/common both sit two levels below the package root.
const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as PackageJson;

export const SERVICE_NAME = pkg.name;
export const SERVICE_VERSION = pkg.version;
