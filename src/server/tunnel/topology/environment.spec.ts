import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { detectEnvironment } from './environment.js';

const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

/** A fake file-system root holding `files` (path → contents; a path ending in / is a directory). */
function tree(files: Record<string, string> = {}): string {
  const root = mkdtempSync(join(tmpdir(), 'so-env-'));
  roots.push(root);
  for (const [path, contents] of Object.entries(files)) {
    if (path.endsWith('/')) {
      mkdirSync(join(root, path), { recursive: true });
    } else {
      mkdirSync(dirname(join(root, path)), { recursive: true });
      writeFileSync(join(root, path), contents);
    }
  }
  return root;
}

const CPUINFO_HOST =
  'processor\t: 0\nflags\t\t: fpu vme de pse tsc msr pae mce cx8 apic sse2 ht syscall nx lm\n';
const CPUINFO_GUEST =
  'processor\t: 0\nflags\t\t: fpu vme de pse tsc msr pae sse2 ht syscall nx lm hypervisor lahf_lm\n';
const CGROUP_V2 = '0::/\n';
const MOUNT = (source: string, target: string) =>
  `1480 1459 259:2 ${source} ${target} rw,relatime - ext4 /dev/nvme0n1p2 rw,errors=remount-ro`;
const DOCKER_ID = '4f1c2b7e9a0d4f1c2b7e9a0d4f1c2b7e9a0d4f1c2b7e9a0d4f1c2b7e9a0d4f1c';

describe('detectEnvironment', () => {
  it('is bare metal when no sign is found, and says what it looked at', async () => {
    const env = await detectEnvironment({
      root: tree({
        '/proc/cpuinfo': CPUINFO_HOST,
        '/proc/1/cgroup': '0::/init.scope\n',
        '/sys/class/dmi/id/product_name': '20XW0026GE\n',
        '/sys/class/dmi/id/sys_vendor': 'LENOVO\n',
        // A Docker host's own table lists the containers' shm mounts: not a sign of being in one.
        '/proc/self/mountinfo': MOUNT(`/var/lib/docker/containers/${DOCKER_ID}/mounts/shm`, '/run/shm'),
      }),
      env: { PATH: '/usr/bin' },
    });
    expect(env.kind).toBe('bare-metal');
    expect(env.evidence).toHaveLength(1);
    expect(env.evidence[0]).toMatch(/^no sign of Kubernetes, a container or a hypervisor/);
  });

  it('reads an empty tree (nothing readable) as bare metal without throwing', async () => {
    expect((await detectEnvironment({ root: tree(), env: {} })).kind).toBe('bare-metal');
    expect((await detectEnvironment({ root: join(tree(), 'missing'), env: {} })).kind).toBe('bare-metal');
  });

  it.each([
    [
      'KUBERNETES_SERVICE_HOST',
      {},
      { KUBERNETES_SERVICE_HOST: '10.96.0.1' },
      'KUBERNETES_SERVICE_HOST is set',
    ],
    [
      'the service account directory',
      { '/var/run/secrets/kubernetes.io/serviceaccount/': '' },
      {},
      '/var/run/secrets/kubernetes.io exists',
    ],
    [
      'a kubepods cgroup',
      {
        '/proc/1/cgroup':
          '11:memory:/kubepods/burstable/pod1a2b/0c1d\n1:cpu:/kubepods/burstable/pod1a2b/0c1d\n',
      },
      {},
      '/proc/1/cgroup names kubepods',
    ],
    [
      "the kubelet's /etc/hostname",
      { '/proc/self/mountinfo': MOUNT('/var/lib/kubelet/pods/1a2b-3c4d/etc-hosts', '/etc/hosts') },
      {},
      '/etc/hosts is mounted from a kubelet pod directory',
    ],
  ])('finds Kubernetes by %s', async (_sign, files, variables, evidence) => {
    const env = await detectEnvironment({ root: tree(files), env: variables });
    expect(env).toEqual({ kind: 'kubernetes', evidence: [evidence] });
  });

  it.each([
    ['/.dockerenv', { '/.dockerenv': '' }, {}, '/.dockerenv exists'],
    [
      '/run/.containerenv',
      { '/run/.containerenv': 'engine="podman-4.9.3"\n' },
      {},
      '/run/.containerenv exists',
    ],
    ['the container variable', {}, { container: 'podman' }, 'the container variable is "podman"'],
    [
      '/run/systemd/container',
      { '/run/systemd/container': 'systemd-nspawn\n' },
      {},
      '/run/systemd/container says "systemd-nspawn"',
    ],
    [
      'a cgroup v1 docker path',
      { '/proc/1/cgroup': `12:pids:/docker/${DOCKER_ID}\n11:memory:/docker/${DOCKER_ID}\n` },
      {},
      '/proc/1/cgroup names docker',
    ],
    [
      "docker's /etc/hostname under cgroup v2",
      {
        '/proc/1/cgroup': CGROUP_V2,
        '/proc/self/mountinfo': [
          MOUNT('/', '/'),
          MOUNT(`/var/lib/docker/containers/${DOCKER_ID}/hostname`, '/etc/hostname'),
          MOUNT(`/var/lib/docker/containers/${DOCKER_ID}/hosts`, '/etc/hosts'),
        ].join('\n'),
      },
      {},
      '/etc/hostname is mounted from a docker container directory',
    ],
    [
      "podman's /etc/hostname",
      {
        '/proc/self/mountinfo': MOUNT(
          '/home/u/.local/share/containers/storage/overlay-containers/abc/userdata/hostname',
          '/etc/hostname',
        ),
      },
      {},
      '/etc/hostname is mounted from a podman container directory',
    ],
  ])('finds a container by %s', async (_sign, files, variables, evidence) => {
    const env = await detectEnvironment({ root: tree(files), env: variables });
    expect(env).toEqual({ kind: 'container', evidence: [evidence] });
  });

  it.each([
    ['QEMU/KVM', 'Standard PC (Q35 + ICH9, 2009)', 'QEMU', ['/sys/class/dmi/id/sys_vendor is "QEMU"']],
    [
      'VMware',
      'VMware Virtual Platform',
      'VMware, Inc.',
      [
        '/sys/class/dmi/id/sys_vendor is "VMware, Inc."',
        '/sys/class/dmi/id/product_name is "VMware Virtual Platform"',
      ],
    ],
    [
      'Hyper-V',
      'Virtual Machine',
      'Microsoft Corporation',
      ['/sys/class/dmi/id/product_name is "Virtual Machine"'],
    ],
    [
      'VirtualBox',
      'VirtualBox',
      'innotek GmbH',
      ['/sys/class/dmi/id/sys_vendor is "innotek GmbH"', '/sys/class/dmi/id/product_name is "VirtualBox"'],
    ],
  ])('finds a %s virtual machine from DMI', async (_name, product, vendor, evidence) => {
    const root = tree({
      '/sys/class/dmi/id/product_name': `${product}\n`,
      '/sys/class/dmi/id/sys_vendor': `${vendor}\n`,
      '/proc/cpuinfo': CPUINFO_HOST,
    });
    expect(await detectEnvironment({ root, env: {} })).toEqual({ kind: 'vm', evidence });
  });

  it('finds a virtual machine from the CPU hypervisor flag or /sys/hypervisor alone', async () => {
    expect(await detectEnvironment({ root: tree({ '/proc/cpuinfo': CPUINFO_GUEST }), env: {} })).toEqual({
      kind: 'vm',
      evidence: ['/proc/cpuinfo has the hypervisor flag'],
    });
    expect(await detectEnvironment({ root: tree({ '/sys/hypervisor/type': 'xen\n' }), env: {} })).toEqual({
      kind: 'vm',
      evidence: ['/sys/hypervisor/type is "xen"'],
    });
  });

  it('does not take an EC2 bare-metal instance or a Microsoft laptop for a virtual machine', async () => {
    for (const [product, vendor] of [
      ['m5.metal', 'Amazon EC2'],
      ['Surface Laptop 5', 'Microsoft Corporation'],
    ]) {
      const root = tree({
        '/sys/class/dmi/id/product_name': product,
        '/sys/class/dmi/id/sys_vendor': vendor,
        '/proc/cpuinfo': CPUINFO_HOST,
      });
      expect((await detectEnvironment({ root, env: {} })).kind).toBe('bare-metal');
    }
  });

  it('names the most specific kind first and keeps every sign: Kubernetes pod in a container on a VM', async () => {
    const root = tree({ '/.dockerenv': '', '/proc/cpuinfo': CPUINFO_GUEST });
    expect(await detectEnvironment({ root, env: {} })).toEqual({
      kind: 'container',
      evidence: ['/.dockerenv exists', '/proc/cpuinfo has the hypervisor flag'],
    });
    const pod = await detectEnvironment({ root, env: { KUBERNETES_SERVICE_HOST: '10.96.0.1' } });
    expect(pod).toEqual({
      kind: 'kubernetes',
      evidence: [
        'KUBERNETES_SERVICE_HOST is set',
        '/.dockerenv exists',
        '/proc/cpuinfo has the hypervisor flag',
      ],
    });
  });

  it('quotes file contents on one short printable line', async () => {
    const root = tree({ '/sys/class/dmi/id/sys_vendor': `QEMU\u0007\n\u001b[31m${'x'.repeat(200)}` });
    const [evidence] = (await detectEnvironment({ root, env: {} })).evidence;
    expect(evidence).toMatch(/^\/sys\/class\/dmi\/id\/sys_vendor is "QEMU\?\?\?\[31mx+"$/);
    expect(evidence.length).toBeLessThan(130);
  });

  it('reads the real machine without throwing', async () => {
    const env = await detectEnvironment();
    expect(['bare-metal', 'vm', 'container', 'kubernetes']).toContain(env.kind);
    expect(env.evidence.length).toBeGreaterThan(0);
  });
});
