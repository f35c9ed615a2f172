import type { ApiClient } from '../api.js';
import type { Command } from '../args.js';
import { clean, printJson, table } from '../output.js';
import { WORKERS, listAll, percent, unexpected } from './shared.js';
import { isWorker } from './views.js';

/** stackctl workers …: one command each, over the HTTP API. */
export async function runWorkers(
  api: ApiClient,
  command: Extract<Command, { name: `workers ${string}` }>,
  json: boolean,
): Promise<void> {
  switch (command.name) {
    case 'workers list': {
      const query: Record<string, string> = {};
      if (command.status !== undefined) query.status = command.status;
      const workers = await listAll(api, WORKERS, 'workers', query, isWorker, 'the worker list');
      if (json) return printJson({ workers });
      if (workers.length === 0) {
        console.log(
          command.status === undefined ? 'No workers.' : `No workers with status ${clean(command.status)}.`,
        );
        return;
      }
      console.log(
        table(
          ['ID', 'NAME', 'STATUS', 'CONNECTED', 'LAST_HEARTBEAT', 'CPU', 'MEM', 'DISK'],
          workers.map((w) => [
            w.id,
            w.name,
            w.status,
            w.connected ? 'yes' : 'no',
            w.last_heartbeat ?? '-',
            percent(w.metrics?.cpu_percent),
            percent(w.metrics?.memory_percent),
            percent(w.metrics?.disk_percent),
          ]),
        ),
      );
      return;
    }
    case 'workers approve': {
      const worker = await api.call('POST', `${WORKERS}/${encodeURIComponent(command.workerId)}/approve`);
      if (!isWorker(worker)) throw unexpected('the approved worker');
      if (json) return printJson(worker);
      const until = worker.last_heartbeat === null ? ' until its agent connects and sends a heartbeat' : '';
      console.log(
        `Approved worker ${clean(worker.id)} (${clean(worker.name)}); its status is ${clean(worker.status)}${until}.`,
      );
      return;
    }
    case 'workers delete':
      await api.call('DELETE', `${WORKERS}/${encodeURIComponent(command.workerId)}`);
      if (!json) console.log(`Deleted worker ${clean(command.workerId)}.`);
      return;
  }
}
