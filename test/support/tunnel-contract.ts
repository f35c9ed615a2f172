import type { Topology } from '../../src/contracts/api/tunnel.js';

// Every field of the topology answer (CONTRACT.md), held to the contract's type by tsc: a field
// added to or dropped from the contract fails to compile here.
const TOPOLOGY: Record<keyof Topology, true> = {
  environment: true,
  has_nat: true,
  local_ips: true,
  public_ip: true,
  default_gateway: true,
  private_subnet: true,
  recommended_mode: true,
  reason: true,
};

/** The topology answer's field names, sorted. */
export const TOPOLOGY_FIELDS = Object.keys(TOPOLOGY).sort();
