import type { ApiClient } from '../api.js';
import { fieldErrorLine } from '../http.js';
import type { Command } from '../args.js';
import { clean, printJson, table } from '../output.js';
import {
  STACKS,
  VALIDATE,
  stackPath,
  definitionCall,
  followHint,
  finishJob,
  printFields,
  orDash,
  listAll,
  unexpected,
} from './shared.js';
import { printStackLogs } from './stack-logs.js';
import { isDefinitionProblem, isStack, isValidationSummary, isStackHealth, isJob } from './views.js';

/** stackctl stacks …: one command each, over the HTTP API. */
export async function runStacks(
  api: ApiClient,
  command: Extract<Command, { name: `stacks ${string}` }>,
  json: boolean,
): Promise<void> {
  switch (command.name) {
    case 'stacks validate': {
      let summary: unknown;
      try {
        summary = await api.call('POST', VALIDATE, definitionCall(command.definition, command.reading));
      } catch (err) {
        // An invalid file is the answer, not a failure of the service: --json prints it too.
        if (json && isDefinitionProblem(err)) printJson(err.body);
        throw err;
      }
      if (!isValidationSummary(summary)) throw unexpected('the validation');
      if (json) return printJson(summary);
      console.log(
        `valid (${clean(summary.format)}): stack kit ${clean(summary.stackkit)}, variant ${clean(summary.variant)}, services ${clean(summary.services.join(', '))}`,
      );
      printWarnings(summary.warnings);
      return;
    }
    case 'stacks create': {
      const stack = await api.call('POST', STACKS, definitionCall(command.definition, command.reading));
      if (!isStack(stack)) throw unexpected('the new stack');
      if (json) return printJson(stack);
      console.log(
        `Created stack "${clean(stack.name)}" (${clean(stack.id)}): revision ${stack.revision}, status ${clean(stack.status)}.`,
      );
      printWarnings(stack.warnings ?? []);
      console.log(`Deploy it with "stackctl stacks deploy ${clean(stack.id)}".`);
      return;
    }
    case 'stacks export': {
      const query = command.format !== undefined ? `?format=${encodeURIComponent(command.format)}` : '';
      const download = await api.download(
        `${stackPath(command.stackId)}/definition${query}`,
        'application/yaml',
      );
      for await (const chunk of download.chunks) process.stdout.write(chunk);
      return;
    }
    case 'stacks list': {
      const stacks = await listAll(api, STACKS, 'stacks', {}, isStack, 'the stack list');
      if (json) return printJson({ stacks });
      if (stacks.length === 0) {
        console.log('No stacks.');
        return;
      }
      console.log(
        table(
          ['ID', 'NAME', 'STATUS', 'REVISION', 'DEPLOYED', 'WORKER', 'UPDATED_AT'],
          stacks.map((s) => [
            s.id,
            s.name,
            s.status,
            String(s.revision),
            orDash(s.deployed_revision),
            orDash(s.worker_id),
            s.updated_at,
          ]),
        ),
      );
      return;
    }
    case 'stacks get': {
      const stack = await api.call('GET', stackPath(command.stackId));
      if (!isStack(stack)) throw unexpected('the stack');
      if (json) return printJson(stack);
      printFields([
        ['id', stack.id],
        ['name', stack.name],
        ['status', stack.status],
        ['stackkit', stack.stackkit],
        ['variant', stack.variant],
        ['revision', String(stack.revision)],
        ['deployed_revision', orDash(stack.deployed_revision)],
        ['worker_id', orDash(stack.worker_id)],
        ['services', stack.services.length === 0 ? '-' : stack.services.join(', ')],
        ['created_at', stack.created_at],
        ['updated_at', stack.updated_at],
      ]);
      return;
    }
    case 'stacks update': {
      const stack = await api.call(
        'PUT',
        stackPath(command.stackId),
        definitionCall(command.definition, command.reading),
      );
      if (!isStack(stack)) throw unexpected('the updated stack');
      if (json) return printJson(stack);
      const deployed =
        stack.deployed_revision === null ? 'never deployed' : `deployed: revision ${stack.deployed_revision}`;
      console.log(
        `Stack "${clean(stack.name)}" (${clean(stack.id)}) is now at revision ${stack.revision} (${deployed}).`,
      );
      printWarnings(stack.warnings ?? []);
      console.log(`Deploy it with "stackctl stacks deploy ${clean(stack.id)}".`);
      return;
    }
    case 'stacks deploy': {
      const job = await api.call('POST', `${stackPath(command.stackId)}/deploy`);
      if (!isJob(job)) throw unexpected('the deploy job');
      if (command.wait) return finishJob(api, job, json);
      if (json) return printJson(job);
      console.log(
        `Deploying revision ${job.revision} of stack "${clean(job.stack_name)}": job ${clean(job.id)} is ${clean(job.status)}.`,
      );
      console.log(followHint(job.id));
      return;
    }
    case 'stacks delete': {
      const job = await api.call(
        'DELETE',
        stackPath(command.stackId),
        command.deleteVolumes ? { query: { volumes: 'delete' } } : {},
      );
      if (!isJob(job)) throw unexpected('the destroy job');
      if (command.wait) {
        await finishJob(api, job, json);
        if (!json) console.log(`Deleted stack ${clean(job.stack_id)}.`);
        return;
      }
      if (json) return printJson(job);
      console.log(
        `Deleting stack "${clean(job.stack_name)}": job ${clean(job.id)} is ${clean(job.status)}; the stack is gone when it succeeds.`,
      );
      console.log(followHint(job.id));
      return;
    }
    case 'stacks logs':
      return printStackLogs(api, command.stackId, command.filters, command.follow, json);
    case 'stacks health': {
      const health = await api.call('GET', `${stackPath(command.stackId)}/health`);
      if (!isStackHealth(health)) throw unexpected('the stack health');
      if (json) return printJson(health);
      const reported =
        health.reported_at === null
          ? 'no report from its worker'
          : `reported at ${clean(health.reported_at)}`;
      console.log(
        `Stack ${clean(health.stack_id)}: ${clean(health.overall)} (worker ${clean(health.worker_id ?? '-')}, ${reported}).`,
      );
      if (health.services.length === 0) {
        console.log('No services.');
        return;
      }
      console.log(
        table(
          ['SERVICE', 'STATUS', 'UPTIME', 'CHECK_STATUS', 'LATENCY'],
          health.services.map((s) => [
            s.name,
            s.status,
            s.uptime,
            s.health_check === undefined ? '-' : String(s.health_check.status_code),
            s.health_check === undefined ? '-' : `${s.health_check.latency_ms}ms`,
          ]),
        ),
      );
      return;
    }
  }
}

function printWarnings(
  warnings: readonly {
    path: string;
    message: string;
    line: number | null;
    column: number | null;
    category: string;
  }[],
): void {
  if (warnings.length === 0) return;
  console.log(`${warnings.length} ${warnings.length === 1 ? 'warning' : 'warnings'}:`);
  for (const warning of warnings) console.log(`  ${clean(fieldErrorLine({ ...warning }))}`);
}
