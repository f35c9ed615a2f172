import type { ApiClient } from '../api.js';
import type { Command } from '../args.js';
import { clean, printJson, table } from '../output.js';
import { JOBS, jobPath, printLogs, printJob, orDash, listAll, unexpected } from './shared.js';
import { isJob, isJobCleanup } from './views.js';

/** stackctl jobs …: one command each, over the HTTP API. */
export async function runJobs(
  api: ApiClient,
  command: Extract<Command, { name: `jobs ${string}` }>,
  json: boolean,
): Promise<void> {
  switch (command.name) {
    case 'jobs list': {
      const query: Record<string, string> = {};
      if (command.status !== undefined) query.status = command.status;
      if (command.stackId !== undefined) query.stack_id = command.stackId;
      if (command.type !== undefined) query.type = command.type;
      const jobs = await listAll(api, JOBS, 'jobs', query, isJob, 'the job list');
      if (json) return printJson({ jobs });
      if (jobs.length === 0) {
        console.log(Object.keys(query).length === 0 ? 'No jobs.' : 'No jobs match.');
        return;
      }
      console.log(
        table(
          ['ID', 'TYPE', 'STACK', 'REVISION', 'STATUS', 'PROGRESS', 'CREATED_AT', 'FINISHED_AT', 'ERROR'],
          jobs.map((j) => [
            j.id,
            j.type,
            j.stack_name,
            String(j.revision),
            j.status,
            `${j.progress}%`,
            j.created_at,
            orDash(j.finished_at),
            orDash(j.error),
          ]),
        ),
      );
      return;
    }
    case 'jobs get': {
      const job = await api.call('GET', jobPath(command.jobId));
      if (!isJob(job)) throw unexpected('the job');
      if (json) return printJson(job);
      printJob(job);
      return;
    }
    case 'jobs logs':
      return printLogs(api, command.jobId, command.follow, json);
    case 'jobs cancel': {
      const job = await api.call('POST', `${jobPath(command.jobId)}/cancel`);
      if (!isJob(job)) throw unexpected('the cancelled job');
      if (json) return printJson(job);
      console.log(
        job.status === 'cancelled'
          ? `Cancelled job ${clean(job.id)}.`
          : `Job ${clean(job.id)} is ${clean(job.status)}; it ends when its agent confirms.`,
      );
      return;
    }
    case 'jobs cleanup': {
      const answer = await api.call('POST', `${jobPath(command.jobId)}/cleanup`);
      if (!isJobCleanup(answer)) throw unexpected('the cleanup');
      if (json) return printJson(answer);
      const { job } = answer;
      const error = job.error === null ? '' : ` (${clean(job.error)})`;
      console.log(`Cleaned up job ${clean(job.id)}: it is ${clean(job.status)}${error}.`);
      console.log(
        answer.worker_notified
          ? 'Its worker was told to stop it and to put the stack back as the last job that succeeded left it.'
          : job.worker_id === null
            ? 'It was never placed on a worker: there is nothing to revert on a node.'
            : 'Its worker is not connected to the service: nothing was reverted on the node.',
      );
      return;
    }
  }
}
