import { accessSync, constants, statfsSync } from 'node:fs';
import { cpus, freemem, totalmem } from 'node:os';
import type { CheckMsg, NodeMetricsMsg } from '../contracts/agent-protocol/index.js';

/** CPU use between two calls, from the kernel's per-core time counters. */
export class CpuSampler {
  private last = totals();

  sample(): number {
    const now = totals();
    const busy = now.busy - this.last.busy;
    const all = now.all - this.last.all;
    this.last = now;
    return all > 0 ? (busy / all) * 100 : 0;
  }
}

function totals(): { busy: number; all: number } {
  let busy = 0;
  let all = 0;
  for (const cpu of cpus()) {
    const { user, nice, sys, irq, idle } = cpu.times;
    busy += user + nice + sys + irq;
    all += user + nice + sys + irq + idle;
  }
  return { busy, all };
}

export function nodeMetrics(cpu: CpuSampler, dataDir: string, containersRunning: number): NodeMetricsMsg {
  const disk = statfsSync(dataDir);
  return {
    cpu_percent: cpu.sample(),
    memory_percent: (1 - freemem() / totalmem()) * 100,
    disk_percent: disk.blocks > 0 ? (1 - disk.bavail / disk.blocks) * 100 : 0,
    containers_running: containersRunning,
  };
}

/** The agent's own checks; a failing critical one makes the worker unhealthy. */
export function agentChecks(dataDir: string, driverOk: boolean, driverDetail: string): CheckMsg[] {
  let writable = true;
  try {
    accessSync(dataDir, constants.W_OK);
  } catch {
    writable = false;
  }
  return [
    {
      name: 'data_dir_writable',
      ok: writable,
      critical: false,
      detail: writable ? '' : `${dataDir} is not writable`,
    },
    { name: 'driver', ok: driverOk, critical: true, detail: driverDetail },
  ];
}
