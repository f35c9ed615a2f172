/**
 * Every key of the Compose Specification in exactly one of three classes (docs/compose.md lists
 * them with these very reasons): `honoured` (mapped to the same behaviour), `refused` (an error
 * naming the key, why, and what to do instead) or `no_effect` (accepted, with a warning saying it
 * changes nothing here). A key of the specification that this table does not name is refused: the
 * schema we check against may be newer than this table, and a key we do not understand may carry
 * data.
 */

export type KeyClass =
  | { class: 'honoured'; note?: string }
  | { class: 'refused'; why: string }
  | { class: 'no_effect'; why: string };

const honoured = (note?: string): KeyClass => ({ class: 'honoured', ...(note ? { note } : {}) });
const refused = (why: string): KeyClass => ({ class: 'refused', why });
const noEffect = (why: string): KeyClass => ({ class: 'no_effect', why });

const BUNDLES =
  'it needs the project directory, which a plain Compose file does not bring (project bundles: a later release)';
const HOST_POWER =
  'it gives the container power over the node; this orchestrator does not grant it to stacks';

export const TOP_LEVEL_KEYS: Record<string, KeyClass> = {
  name: honoured('the stack name, unless ?name= is given'),
  services: honoured(),
  volumes: honoured('named volumes of the stack on its worker'),
  networks: honoured('the stack network; services reach each other by name'),
  configs: honoured('inline content or an environment variable, as files'),
  secrets: honoured('inline content or an environment variable, as files'),
  version: noEffect('obsolete in the Compose Specification; docker compose ignores it too'),
  include: refused(`it reads other Compose files: ${BUNDLES}; paste the included services into this file`),
  models: refused('AI models are not run by this orchestrator'),
};

export const SERVICE_KEYS: Record<string, KeyClass> = {
  image: honoured(),
  command: honoured('a string is split into words as Compose splits it, and never run in a shell'),
  entrypoint: honoured('a string is split into words as Compose splits it'),
  environment: honoured('list or mapping; a name without a value takes it from the stack variables'),
  env_file: refused(`it reads a file: ${BUNDLES}; write the variables under environment`),
  ports: honoured('short and long syntax, ranges up to 100 ports'),
  expose: honoured(),
  volumes: honoured('named, anonymous, bind (where the worker allows it) and tmpfs'),
  tmpfs: honoured(),
  configs: honoured(),
  secrets: honoured(),
  healthcheck: honoured(
    'CMD, CMD-SHELL, NONE, disable, interval, timeout, retries, start_period, start_interval',
  ),
  depends_on: honoured(
    'list and mapping; service_started, service_healthy, service_completed_successfully, required, restart',
  ),
  restart: honoured('no, always, on-failure[:N], unless-stopped'),
  user: honoured(),
  working_dir: honoured(),
  hostname: honoured(),
  labels: honoured('set on the container; io.stack-orchestrator.* labels are ours'),
  networks: honoured('the stack network, with aliases'),
  links: honoured('services reach each other by name anyway; link aliases become network aliases'),
  extra_hosts: honoured(),
  stop_signal: honoured(),
  stop_grace_period: honoured(),
  init: honoured(),
  read_only: honoured(),
  shm_size: honoured(),
  ulimits: honoured(),
  deploy: honoured('resources limits and reservations, restart_policy, replicas 1'),
  cpus: honoured('a hard CPU limit, as deploy.resources.limits.cpus'),
  mem_limit: honoured('a hard memory limit, as deploy.resources.limits.memory'),
  mem_reservation: honoured('counts against the kit, as deploy.resources.reservations.memory'),
  profiles: honoured('a service with profiles runs when the request selects one of them (?profiles=)'),
  pull_policy: honoured(
    'missing and if_not_present (the driver pulls an image a node lacks); always, never and build are refused',
  ),
  build: refused(
    'images are not built by this orchestrator yet (project bundles and builds: a later release); build the image, push it to a registry the nodes reach, and name it under image',
  ),
  privileged: refused(HOST_POWER),
  cap_add: refused(HOST_POWER),
  devices: refused(HOST_POWER),
  device_cgroup_rules: refused(HOST_POWER),
  network_mode: refused(
    "services run on the stack network (host or another container's network give power over the node or another stack)",
  ),
  pid: refused(HOST_POWER),
  ipc: refused(HOST_POWER),
  uts: refused(HOST_POWER),
  userns_mode: refused(HOST_POWER),
  sysctls: refused(HOST_POWER),
  security_opt: refused(HOST_POWER),
  cgroup: refused(HOST_POWER),
  cgroup_parent: refused(HOST_POWER),
  use_api_socket: refused(`it hands the engine's socket to the container: ${HOST_POWER}`),
  volumes_from: refused(
    "it shares another container's volumes; give both services the same named volume instead",
  ),
  external_links: refused('they reach containers outside the stack; publish a port or use one stack'),
  gpus: refused('GPUs are not scheduled by this orchestrator'),
  runtime: refused("containers run on the engine's default runtime"),
  isolation: refused('it is a Windows container setting'),
  credential_spec: refused('it is a Windows container setting'),
  extends: refused('it reads another service definition: write the service out in full'),
  label_file: refused(`it reads a file: ${BUNDLES}; write the labels under labels`),
  scale: refused('one container per service: scale above 1 is not supported'),
  post_start: refused(
    "lifecycle hooks are not run by this orchestrator; run the step in the image's entrypoint",
  ),
  pre_stop: refused(
    "lifecycle hooks are not run by this orchestrator; run the step in the image's entrypoint",
  ),
  provider: refused('provider services are not run by this orchestrator'),
  models: refused('AI models are not run by this orchestrator'),
  develop: noEffect('docker compose watch is for development machines'),
  container_name: noEffect(
    'the orchestrator names containers itself (so-<stack>-<service>); services still reach each other by service name',
  ),
  logging: noEffect('the agent collects the output of every container (GET .../stacks/{id}/logs)'),
  platform: noEffect('the node pulls the image for its own platform'),
  stdin_open: noEffect("nobody attaches to a container's input here"),
  tty: noEffect("nobody attaches to a container's terminal here"),
  attach: noEffect('output is collected by the agent, not attached to a terminal'),
  domainname: noEffect("the container keeps the engine's domain name"),
  mac_address: noEffect('the engine assigns the MAC address'),
  dns: noEffect("containers use the engine's resolver (which resolves the stack's services)"),
  dns_opt: noEffect("containers use the engine's resolver"),
  dns_search: noEffect("containers use the engine's resolver"),
  cap_drop: noEffect("the container keeps the engine's default capabilities"),
  oom_kill_disable: noEffect("the engine's default applies"),
  oom_score_adj: noEffect("the engine's default applies"),
  pids_limit: noEffect("the engine's default applies"),
  cpu_shares: noEffect('CPU is limited by cpus or deploy.resources only'),
  cpu_quota: noEffect('CPU is limited by cpus or deploy.resources only'),
  cpu_period: noEffect('CPU is limited by cpus or deploy.resources only'),
  cpu_rt_runtime: noEffect('CPU is limited by cpus or deploy.resources only'),
  cpu_rt_period: noEffect('CPU is limited by cpus or deploy.resources only'),
  cpu_count: noEffect('CPU is limited by cpus or deploy.resources only'),
  cpu_percent: noEffect('CPU is limited by cpus or deploy.resources only'),
  cpuset: noEffect('CPU is limited by cpus or deploy.resources only'),
  blkio_config: noEffect("the engine's default I/O weights apply"),
  memswap_limit: noEffect("the engine's default swap applies"),
  mem_swappiness: noEffect("the engine's default swap applies"),
  storage_opt: noEffect("the engine's storage defaults apply"),
  annotations: noEffect('annotations are not set on containers here'),
  group_add: noEffect("the container runs with the image's groups"),
};

export const DEPLOY_KEYS: Record<string, KeyClass> = {
  resources: honoured('limits (cpus, memory) are hard caps; reservations count against the kit'),
  restart_policy: honoured('condition none, on-failure, any; max_attempts (used when restart is not set)'),
  replicas: honoured('1 (one container per service); more is refused'),
  mode: honoured('replicated with one replica; global is refused'),
  labels: noEffect('deploy labels belong to a Swarm service; use labels for the container'),
  placement: noEffect('Swarm placement: a stack runs on one worker of its kit, chosen by the orchestrator'),
  update_config: noEffect('updates replace the container (safe deploys: a later release)'),
  rollback_config: noEffect('updates replace the container (safe deploys: a later release)'),
  endpoint_mode: noEffect('services are reached by name on the stack network'),
};

export const VOLUME_KEYS: Record<string, KeyClass> = {
  driver: honoured('local only'),
  labels: honoured(),
  name: noEffect('the engine volume is named so-<stack id>_<volume> so that stacks never share data'),
  driver_opts: refused(
    'they can mount host paths and network shares: bind a directory the worker allows instead',
  ),
  external: refused('an external volume lives outside any stack; make it a volume of this stack'),
};

export const NETWORK_KEYS: Record<string, KeyClass> = {
  driver: honoured('bridge only'),
  labels: noEffect("the stack network carries the orchestrator's labels"),
  name: noEffect('the stack network is named so-<stack id>'),
  attachable: noEffect("the stack network takes only the stack's containers"),
  internal: refused('internal networks are not supported: every service of a stack shares one network'),
  external: refused('external networks reach outside the stack: publish a port instead'),
  ipam: refused('addresses are assigned by the engine'),
  enable_ipv4: noEffect("the engine's default applies"),
  enable_ipv6: noEffect("the engine's default applies"),
  driver_opts: refused('driver options are not supported'),
};

export const FILE_OBJECT_KEYS: Record<string, KeyClass> = {
  content: honoured(),
  environment: honoured('the value of a stack variable'),
  file: refused(`it reads a file: ${BUNDLES}; put the text under content`),
  external: refused(
    'external configs and secrets are stored outside the stack (stored secrets: a later release); put the text under content or environment',
  ),
  name: noEffect('the file is placed by its target path'),
  labels: noEffect('files carry no labels'),
  driver: refused('config and secret drivers are not supported'),
  driver_opts: refused('config and secret drivers are not supported'),
  template_driver: refused('template drivers are not supported'),
};
