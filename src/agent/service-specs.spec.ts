import { describe, expect, it } from 'vitest';
import type { ServiceSpecMsg } from '../contracts/agent-protocol/index.js';
import { resolveServices } from './service-specs.js';

const msg = (over: Partial<ServiceSpecMsg> = {}): ServiceSpecMsg => ({
  name: 'web',
  image: 'busybox',
  command: [],
  env: {},
  ports: [],
  cpu: 0,
  memory_bytes: 0,
  restart: 'on-failure',
  health_check: null,
  digest: 'sha256:web',
  ...over,
});

describe('resolveServices', () => {
  it("keeps a port's node address, so 127.0.0.1:8080:80 is published on loopback only", () => {
    const [spec] = resolveServices(
      [
        msg({
          ports: [
            { container: 80, host: 8080, protocol: 'tcp', address: '127.0.0.1' },
            { container: 81, host: 8081, protocol: 'udp' },
          ],
        }),
      ],
      {},
    );
    expect(spec.ports).toEqual([
      { container: 80, host: 8080, protocol: 'tcp', address: '127.0.0.1' },
      { container: 81, host: 8081, protocol: 'udp' },
    ]);
  });

  it('passes volumes and container options on, and defaults them for specs without them', () => {
    const container = {
      entrypoint: [],
      entrypoint_set: true,
      user: '1000',
      working_dir: '',
      hostname: '',
      labels: {},
      aliases: [],
      extra_hosts: [],
      stop_signal: '',
      stop_grace_period_ms: 0,
      init: false,
      read_only: false,
      shm_size_bytes: 0,
      ulimits: [],
      expose: [],
      memory_reservation_bytes: 0,
      restart_max_retries: 0,
      uncapped: true,
      cpu_limit: 0,
      memory_limit_bytes: 0,
    };
    const volumes = [{ type: 'volume', source: 'data', target: '/data', read_only: true, size_bytes: 0 }];
    const [spec] = resolveServices([msg({ volumes, container })], {});
    expect(spec.volumes).toEqual(volumes);
    expect(spec.container).toEqual(container);
    const [plain] = resolveServices([msg()], {});
    expect(plain.volumes).toEqual([]);
    expect(plain.container).toBeNull();
  });

  it('refuses a mount type it does not know rather than dropping it', () => {
    expect(() =>
      resolveServices(
        [msg({ volumes: [{ type: 'npipe', source: 'x', target: '/x', read_only: false, size_bytes: 0 }] })],
        {},
      ),
    ).toThrow('web: unknown mount type "npipe" for /x');
  });
});
