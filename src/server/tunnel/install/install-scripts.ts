import { readFileSync } from 'node:fs';
import { quotePosix, quotePowerShell } from './shell-quote.js';

/**
 * The installers as they are served: fixed files (scripts/, copied beside the compiled module by the
 * build). No request value is ever written into them; the one-line commands hand every value over
 * as a quoted argument or environment variable instead.
 */
export const INSTALL_SCRIPTS = {
  'install.sh': new URL('./scripts/install.sh', import.meta.url),
  'install.ps1': new URL('./scripts/install.ps1', import.meta.url),
} as const;

export type InstallScriptName = keyof typeof INSTALL_SCRIPTS;

/** Reads each script once. */
export class InstallScripts {
  private readonly texts = new Map<InstallScriptName, string>();

  text(name: InstallScriptName): string {
    let text = this.texts.get(name);
    if (text === undefined) {
      text = readFileSync(INSTALL_SCRIPTS[name], 'utf8');
      this.texts.set(name, text);
    }
    return text;
  }
}

export interface InstallCommandValues {
  /** Where the installers and the agent are downloaded from; also the agent's --server. */
  registryUrl: string;
  /** The join token, already checked to be in its format. */
  token: string;
  /** The agent CA's SHA-256 fingerprint (hex), pinned by the agent at enrollment. */
  caFingerprint: string;
  /** The SHA-256 (hex) of /downloads/stack-agent.mjs, checked by the installer. */
  sha256: string;
  /** AGENT_ENDPOINTS as `host:port` entries: the agent's --agent-endpoint list; none: left out. */
  agentEndpoints?: readonly string[];
}

export interface InstallCommands {
  /** POSIX sh: downloads install.sh with curl (wget without it) and pipes it into `sh -s`. */
  linux: string;
  /** PowerShell: downloads install.ps1 and runs it as a script block. */
  windows: string;
}

/**
 * The one-line commands. Every value is a single-quoted literal of its shell (`UnquotableError` for
 * one that cannot be: a NUL or a line break). The join token reaches install.sh in its environment,
 * so it is in no process list; extra words pasted after the linux command go to the agent.
 */
export function installCommands(values: InstallCommandValues): InstallCommands {
  const base = values.registryUrl.replace(/\/+$/, '');
  const sh = quotePosix;
  const shUrl = sh(`${base}/install.sh`);
  const endpoints = values.agentEndpoints?.length ? values.agentEndpoints.join(',') : undefined;
  const linux =
    `if command -v curl >/dev/null 2>&1; then curl -fsSL ${shUrl}; else wget -qO- ${shUrl}; fi` +
    ` | STACK_AGENT_TOKEN=${sh(values.token)} sh -s --` +
    ` --server ${sh(base)} --sha256 ${sh(values.sha256)} --ca-fingerprint ${sh(values.caFingerprint)}` +
    (endpoints ? ` --agent-endpoint ${sh(endpoints)}` : '');
  const ps = quotePowerShell;
  const windows =
    `& ([scriptblock]::Create((Invoke-WebRequest -UseBasicParsing -Uri ${ps(`${base}/install.ps1`)}).Content))` +
    ` -Server ${ps(base)} -Token ${ps(values.token)} -Sha256 ${ps(values.sha256)}` +
    ` -CaFingerprint ${ps(values.caFingerprint)}` +
    (endpoints ? ` -AgentEndpoint ${ps(endpoints)}` : '');
  return { linux, windows };
}
