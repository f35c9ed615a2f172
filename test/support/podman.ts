import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { request } from 'node:http';
import { dirname, join } from 'node:path';

/** Built by scripts/podman-setup.sh from busybox-static; no registry is needed or reachable. */
export const TEST_IMAGE = 'localhost/stack-test/busybox:1';
/** Same content as TEST_IMAGE with another image id and `STACK_TEST_IMAGE=busybox-2`. */
export const TEST_IMAGE_2 = 'localhost/stack-test/busybox:2';
/** Never built: pulling it fails (nothing listens on localhost:443). */
export const MISSING_IMAGE = 'localhost/stack-test/missing:1';
/** The environment each test image sets itself (its Config.Env). */
export const TEST_IMAGE_ENV = { PATH: '/bin', STACK_TEST_IMAGE: 'busybox-1' };

export const DEFAULT_PODMAN_SOCKET = '/run/stack-test/podman.sock';

function socketPath(): string {
  return process.env.PODMAN_SOCKET ?? DEFAULT_PODMAN_SOCKET;
}

/** The Docker Engine API socket podman serves, after checking that it answers `/_ping`. */
export async function podmanSocket(): Promise<string> {
  const path = socketPath();
  try {
    const body = await new Promise<string>((resolve, reject) => {
      const req = request({ socketPath: path, path: '/_ping', timeout: 3000 }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () =>
          res.statusCode === 200 ? resolve(text) : reject(new Error(`HTTP ${res.statusCode}`)),
        );
      });
      req.on('timeout', () => req.destroy(new Error('no answer within 3 s')));
      req.on('error', reject);
      req.end();
    });
    if (body.trim() !== 'OK') throw new Error(`unexpected answer ${JSON.stringify(body)}`);
  } catch (err) {
    throw new Error(
      `no Docker Engine API on ${path} (${(err as Error).message}): run scripts/podman-setup.sh as root ` +
        `(set PODMAN_SOCKET for another path)`,
      { cause: err },
    );
  }
  return path;
}

/**
 * The podman CLI on the same (rootful) storage as the socket's service, for changing things by hand.
 * Uses the containers.conf podman-setup.sh wrote beside the socket, as the service does.
 */
export function podman(args: string[]): Promise<string> {
  const conf = join(dirname(socketPath()), 'containers.conf');
  const env = existsSync(conf) ? { ...process.env, CONTAINERS_CONF: conf } : process.env;
  return new Promise((resolve, reject) => {
    execFile('podman', args, { env, timeout: 60_000 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`podman ${args.join(' ')} failed: ${stderr.trim() || err.message}`));
      else resolve(stdout.trim());
    });
  });
}
