import type { ApiClient } from '../api.js';
import type { Command } from '../args.js';
import { clean, printJson } from '../output.js';
import { stackPath, followHint, finishJob, printDrift, unexpected } from './shared.js';
import type { DriftResourcesRequest } from '../../contracts/api/index.js';
import { isDrift, isDriftResolve } from './views.js';

/** stackctl drift …: one command each, over the HTTP API. */
export async function runDrift(
  api: ApiClient,
  command: Extract<Command, { name: `drift ${string}` }>,
  json: boolean,
): Promise<void> {
  switch (command.name) {
    case 'drift get': {
      const drift = await api.call('GET', `${stackPath(command.stackId)}/drift`);
      if (!isDrift(drift)) throw unexpected('the drift');
      if (json) return printJson(drift);
      printDrift(drift);
      return;
    }
    case 'drift ignore':
    case 'drift unignore': {
      const action = command.name === 'drift ignore' ? 'ignore' : 'unignore';
      const drift = await api.call('POST', `${stackPath(command.stackId)}/drift/${action}`, {
        body: { resources: command.resources } satisfies DriftResourcesRequest,
      });
      if (!isDrift(drift)) throw unexpected('the drift');
      if (json) return printJson(drift);
      printDrift(drift);
      return;
    }
    case 'drift resolve': {
      const answer = await api.call('POST', `${stackPath(command.stackId)}/drift/resolve`);
      if (!isDriftResolve(answer)) throw unexpected('the resolve job');
      if (command.wait) return finishJob(api, answer.job, json);
      if (json) return printJson(answer);
      console.log(
        `Resolving the drift of stack "${clean(answer.job.stack_name)}": job ${clean(answer.job_id)} is ${clean(answer.job.status)}.`,
      );
      console.log(followHint(answer.job_id));
      return;
    }
  }
}
