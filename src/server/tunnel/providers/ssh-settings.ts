import { accessSync, constants, statSync } from 'node:fs';
import { fsReason, isPort, publicUrlProblem } from './provider-settings.js';

/** The `TUNNEL_SSH_*` settings and `TUNNEL_PUBLIC_URL`, as the configuration parsed them (unset: undefined). */
export interface SshTunnelSettings {
  host?: string;
  /** Default 22. */
  port?: number;
  user?: string;
  keyFile?: string;
  /** The relay's host key fingerprint as `ssh-keygen -lf` prints it: `SHA256:...`. */
  hostKey?: string;
  /** The relay port that forwards to this instance's HTTP port. */
  remotePort?: number;
  /** The relay port that forwards to this instance's agent (gRPC) port. */
  agentRemotePort?: number;
  /** Where the relay exposes the forwarded HTTP port (directly or behind its reverse proxy). */
  publicUrl?: string;
}

/** Settings that passed checkSshSettings(), with the fingerprint in its canonical form. */
export interface ValidSshSettings {
  host: string;
  port: number;
  user: string;
  keyFile: string;
  hostKey: string;
  remotePort: number;
  agentRemotePort: number;
  publicUrl: string;
}

// ssh-keygen prints the SHA-256 digest (32 bytes) as 43 base64 characters without the '=' padding.
const FINGERPRINT = /^SHA256:([A-Za-z0-9+/]{43})=?$/;

const HOST_KEY_HINT =
  'take it on the relay with `ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub` (the SHA256:... part)';

/** The canonical `SHA256:<base64 without padding>` form, or undefined when `value` is not one. */
export function normalizeFingerprint(value: string): string | undefined {
  const match = FINGERPRINT.exec(value.trim());
  return match ? `SHA256:${match[1]}` : undefined;
}

/** ssh2 hands the verifier a hex digest (`hostHash: 'sha256'`); this is how ssh-keygen would print it. */
export function fingerprintFromHex(hex: string): string {
  return `SHA256:${Buffer.from(hex, 'hex').toString('base64').replace(/=+$/, '')}`;
}

function checkPort(name: string, value: number | undefined, what: string, problems: string[]): void {
  if (value === undefined) problems.push(`${name} is not set: ${what}.`);
  else if (!isPort(value)) problems.push(`${name} must be a port number from 1 to 65535 (got ${value}).`);
}

/** Every problem with the settings, one sentence each naming the variable; [] when they can work. */
export function checkSshSettings(settings: SshTunnelSettings): string[] {
  const problems: string[] = [];
  const host = settings.host?.trim();
  if (!host) problems.push('TUNNEL_SSH_HOST is not set: the relay host the tunnel connects to.');
  else if (/[\s@/]/.test(host)) problems.push('TUNNEL_SSH_HOST must be a host name or an IP address.');
  if (settings.port !== undefined && !isPort(settings.port)) {
    problems.push(`TUNNEL_SSH_PORT must be a port number from 1 to 65535 (got ${settings.port}).`);
  }
  if (!settings.user?.trim())
    problems.push('TUNNEL_SSH_USER is not set: the user to log in as on the relay.');
  if (!settings.keyFile?.trim()) {
    problems.push('TUNNEL_SSH_KEY_FILE is not set: the OpenSSH private key to log in with.');
  } else {
    try {
      accessSync(settings.keyFile, constants.R_OK);
      if (!statSync(settings.keyFile).isFile())
        problems.push(`TUNNEL_SSH_KEY_FILE ${settings.keyFile} is not a file.`);
    } catch (err) {
      problems.push(`TUNNEL_SSH_KEY_FILE ${settings.keyFile} cannot be read (${fsReason(err)}).`);
    }
  }
  if (!settings.hostKey?.trim()) {
    problems.push(
      `TUNNEL_SSH_HOST_KEY is not set: the tunnel does not connect to a relay it cannot verify; ${HOST_KEY_HINT}.`,
    );
  } else if (!normalizeFingerprint(settings.hostKey)) {
    problems.push(
      `TUNNEL_SSH_HOST_KEY must be a SHA256 fingerprint as ssh-keygen -lf prints it; ${HOST_KEY_HINT}.`,
    );
  }
  checkPort('TUNNEL_SSH_REMOTE_PORT', settings.remotePort, 'the relay port for the HTTP port', problems);
  checkPort(
    'TUNNEL_SSH_AGENT_REMOTE_PORT',
    settings.agentRemotePort,
    'the relay port for the agent port',
    problems,
  );
  if (isPort(settings.remotePort) && settings.remotePort === settings.agentRemotePort) {
    problems.push('TUNNEL_SSH_REMOTE_PORT and TUNNEL_SSH_AGENT_REMOTE_PORT must be different ports.');
  }
  const urlProblem = publicUrlProblem(
    settings.publicUrl,
    'the URL where the relay exposes the forwarded HTTP port',
  );
  if (urlProblem) problems.push(urlProblem);
  return problems;
}

/** The settings in the form connect() uses, or undefined when checkSshSettings() finds problems. */
export function validSshSettings(settings: SshTunnelSettings): ValidSshSettings | undefined {
  const { host, user, keyFile, hostKey, remotePort, agentRemotePort, publicUrl } = settings;
  const fingerprint = hostKey === undefined ? undefined : normalizeFingerprint(hostKey);
  if (
    checkSshSettings(settings).length > 0 ||
    !host ||
    !user ||
    !keyFile ||
    !fingerprint ||
    remotePort === undefined ||
    agentRemotePort === undefined ||
    !publicUrl
  ) {
    return undefined;
  }
  return {
    host: host.trim(),
    port: settings.port ?? 22,
    user: user.trim(),
    keyFile,
    hostKey: fingerprint,
    remotePort,
    agentRemotePort,
    publicUrl,
  };
}
