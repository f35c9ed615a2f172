import type { Topology } from '../../../contracts/api/tunnel.js';
import { detectEnvironment } from './environment.js';
import { addressSet } from './ip-address.js';
import { readNetworkInfo, type InterfaceTable } from './network-info.js';
import { recommend } from './recommendation.js';
import { queryPublicAddress, type StunLookup, type StunServer } from './stun-client.js';

/** The answer of `GET /api/v1/tunnel/topology` (CONTRACT.md "Tunnel and MCP"). */
/** The answer of GET /api/v1/tunnel/topology, as the contract states it. */
export type { Topology };

export interface TopologyDetectorOptions {
  stunServers: readonly StunServer[];
  /** Longest a detection takes, the STUN query included. */
  deadlineMs?: number;
  /** How long an answer is served again before the next detection. */
  cacheMs?: number;
  /** File-system root for /proc, /sys and the container markers. */
  root?: string;
  now?: () => number;
  env?: Readonly<Record<string, string | undefined>>;
  interfaces?: () => InterfaceTable;
  lookup?: StunLookup;
  /** First STUN retransmission interval; RFC 5389's 500 ms unless a test wants more sends. */
  initialRtoMs?: number;
}

export const TOPOLOGY_DEADLINE_MS = 3000;
export const TOPOLOGY_CACHE_MS = 60_000;

/**
 * Detects the network topology at most once a minute: concurrent callers share one detection,
 * and callers within `cacheMs` of its end get the same answer without any STUN traffic.
 */
export class TopologyDetector {
  private readonly deadlineMs: number;
  private readonly cacheMs: number;
  private readonly now: () => number;
  private cached: { value: Topology; at: number } | undefined;
  private running: Promise<Topology> | undefined;

  constructor(private readonly options: TopologyDetectorOptions) {
    this.deadlineMs = options.deadlineMs ?? TOPOLOGY_DEADLINE_MS;
    this.cacheMs = options.cacheMs ?? TOPOLOGY_CACHE_MS;
    this.now = options.now ?? Date.now;
  }

  detect(): Promise<Topology> {
    if (this.cached && this.now() - this.cached.at < this.cacheMs) return Promise.resolve(this.cached.value);
    this.running ??= this.run()
      .then((value) => {
        this.cached = { value, at: this.now() };
        return value;
      })
      .finally(() => {
        this.running = undefined;
      });
    return this.running;
  }

  /**
   * The local probes read /proc and /sys while the STUN query runs, so the query's deadline is
   * the whole detection's.
   */
  private async run(): Promise<Topology> {
    const { root, env, interfaces, lookup, initialRtoMs } = this.options;
    const [environment, network, stun] = await Promise.all([
      detectEnvironment({ root, env }),
      readNetworkInfo({ root, interfaces }),
      queryPublicAddress(this.options.stunServers, { deadlineMs: this.deadlineMs, lookup, initialRtoMs }),
    ]);
    const localIps = [...new Set(network.addresses.map((a) => a.address))];
    const publicIp = stun.mapped?.address ?? null;
    const hasNat = publicIp !== null && !addressSet(localIps)(publicIp);
    return {
      environment,
      has_nat: hasNat,
      local_ips: localIps,
      public_ip: publicIp,
      default_gateway: network.defaultGateway,
      private_subnet: network.privateSubnet,
      ...recommend({
        environment: environment.kind,
        publicIp,
        hasNat,
        attempts: stun.attempts,
        deadlineMs: this.deadlineMs,
      }),
    };
  }
}
