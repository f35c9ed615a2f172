import type { TopologyEnvironment } from '../../../contracts/api/tunnel.js';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';

export type EnvironmentKind = 'bare-metal' | 'vm' | 'container' | 'kubernetes';

/**
 * Where this process runs. `evidence` lists every sign found, the most specific kind's first: a
 * container on a virtual machine is `container`, and its evidence shows the hypervisor too.
 */
export type Environment = TopologyEnvironment;

export interface EnvironmentOptions {
  /** File-system root the probes read under; tests point it at a fake tree. */
  root?: string;
  env?: Env;
}

type Env = Readonly<Record<string, string | undefined>>;

export async function detectEnvironment(options: EnvironmentOptions = {}): Promise<Environment> {
  const probe = new Probe(options.root ?? '/');
  // The service passes what its config read (only src/server/config reads the environment); none: no hints.
  const env = options.env ?? {};
  const [kubernetes, container, vm] = await Promise.all([
    kubernetesSigns(probe, env),
    containerSigns(probe, env),
    vmSigns(probe),
  ]);
  const kind: EnvironmentKind =
    kubernetes.length > 0
      ? 'kubernetes'
      : container.length > 0
        ? 'container'
        : vm.length > 0
          ? 'vm'
          : 'bare-metal';
  const evidence = [...kubernetes, ...container, ...vm];
  if (evidence.length === 0) {
    evidence.push(
      'no sign of Kubernetes, a container or a hypervisor (environment, /.dockerenv, /run/.containerenv, ' +
        '/proc/1/cgroup, /proc/self/mountinfo, /sys/class/dmi/id, /proc/cpuinfo)',
    );
  }
  return { kind, evidence };
}

async function kubernetesSigns(probe: Probe, env: Env): Promise<string[]> {
  const signs: string[] = [];
  if (env.KUBERNETES_SERVICE_HOST) signs.push('KUBERNETES_SERVICE_HOST is set');
  if (await probe.exists('/var/run/secrets/kubernetes.io'))
    signs.push('/var/run/secrets/kubernetes.io exists');
  if (/kubepods/.test((await probe.read('/proc/1/cgroup')) ?? ''))
    signs.push('/proc/1/cgroup names kubepods');
  const kubelet = runtimeMounts(await probe.read('/proc/self/mountinfo')).get('kubelet');
  if (kubelet) signs.push(`${kubelet} is mounted from a kubelet pod directory`);
  return signs;
}

async function containerSigns(probe: Probe, env: Env): Promise<string[]> {
  const signs: string[] = [];
  for (const path of ['/.dockerenv', '/run/.containerenv']) {
    if (await probe.exists(path)) signs.push(`${path} exists`);
  }
  // systemd-nspawn, podman and LXC set `container`; systemd also records it in a file.
  if (env.container) signs.push(`the container variable is "${printable(env.container)}"`);
  const systemd = (await probe.read('/run/systemd/container'))?.trim();
  if (systemd) signs.push(`/run/systemd/container says "${printable(systemd)}"`);
  // With cgroup v1, PID 1 of a container sits in a cgroup named after the runtime; with cgroup v2
  // a container usually sees only "0::/", which is why the mounts below are checked too.
  const runtime = /\b(docker|containerd|libpod|lxc|crio|podman)\b/.exec(
    (await probe.read('/proc/1/cgroup')) ?? '',
  );
  if (runtime) signs.push(`/proc/1/cgroup names ${runtime[1]}`);
  for (const [runtime, mountPoint] of runtimeMounts(await probe.read('/proc/self/mountinfo'))) {
    if (runtime !== 'kubelet') signs.push(`${mountPoint} is mounted from a ${runtime} container directory`);
  }
  return signs;
}

const RUNTIME_DIRECTORIES: [RegExp, string][] = [
  [/\/docker\/containers\//, 'docker'],
  [/\/containers\/storage\/|\/libpod\//, 'podman'],
  [/\/kubelet\/pods\//, 'kubelet'],
  [/\/containerd\//, 'containerd'],
];

/**
 * Runtimes bind-mount /etc/hostname, /etc/hosts and /etc/resolv.conf from their own state
 * directories; only those mount points count, because a container host's own table can list
 * mounts under the same directories.
 */
function runtimeMounts(mountinfo: string | null): Map<string, string> {
  const found = new Map<string, string>();
  for (const line of (mountinfo ?? '').split('\n')) {
    const [, , , source = '', mountPoint = ''] = line.split(' ');
    if (!['/etc/hostname', '/etc/hosts', '/etc/resolv.conf'].includes(mountPoint)) continue;
    const runtime = RUNTIME_DIRECTORIES.find(([pattern]) => pattern.test(source))?.[1];
    if (runtime && !found.has(runtime)) found.set(runtime, mountPoint);
  }
  return found;
}

const VM_VENDORS =
  /\b(QEMU|KVM|VMware|innotek|VirtualBox|Xen|Parallels|Bochs|BHYVE|Amazon EC2|DigitalOcean|OpenStack|Nutanix|Hetzner)\b/i;
const VM_PRODUCTS =
  /\b(KVM|QEMU|VMware|VirtualBox|Virtual Machine|HVM domU|Bochs|BHYVE|Google Compute Engine|Droplet)\b/i;

async function vmSigns(probe: Probe): Promise<string[]> {
  const signs: string[] = [];
  const product = (await probe.read('/sys/class/dmi/id/product_name'))?.trim() ?? '';
  const vendor = (await probe.read('/sys/class/dmi/id/sys_vendor'))?.trim() ?? '';
  // EC2 bare-metal instances carry Amazon's vendor string on real hardware.
  const metal = /\.metal\b/i.test(product);
  if (VM_VENDORS.test(vendor) && !metal) signs.push(`/sys/class/dmi/id/sys_vendor is "${printable(vendor)}"`);
  if (VM_PRODUCTS.test(product)) signs.push(`/sys/class/dmi/id/product_name is "${printable(product)}"`);
  const hypervisor = (await probe.read('/sys/hypervisor/type'))?.trim();
  if (hypervisor) signs.push(`/sys/hypervisor/type is "${printable(hypervisor)}"`);
  // The CPU sets this flag only for a guest (the "hypervisor present" bit of CPUID).
  if (/^flags\s*:.*\bhypervisor\b/m.test((await probe.read('/proc/cpuinfo')) ?? '')) {
    signs.push('/proc/cpuinfo has the hypervisor flag');
  }
  return signs;
}

/** File reads under the root that treat anything unreadable as absent. */
class Probe {
  constructor(private readonly root: string) {}

  async read(path: string): Promise<string | null> {
    try {
      // /proc/cpuinfo on a large machine runs to a few hundred kilobytes; nothing here needs more.
      return (await readFile(join(this.root, path), 'utf8')).slice(0, 1 << 20);
    } catch {
      return null;
    }
  }

  async exists(path: string): Promise<boolean> {
    try {
      await stat(join(this.root, path));
      return true;
    } catch {
      return false;
    }
  }
}

/** File contents go into the answer: keep them short and on one line. */
function printable(text: string): string {
  return text.replace(/[^\x20-\x7e]/g, '?').slice(0, 80);
}
