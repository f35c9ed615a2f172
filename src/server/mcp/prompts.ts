import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { ErrorCode, type GetPromptResult } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from '@nestjs/common';
import * as z from 'zod/v4';
import { hasScope } from '../auth/scopes.js';
import type { Caller } from '../common/request-context.js';
import type { JobView } from '../../contracts/api/jobs.js';
import { DriftService } from '../drift/drift.service.js';
import { JobsService } from '../jobs/jobs.service.js';
import { StacksService } from '../stacks/stacks.service.js';
import { allLogLines, readFor, SCOPE } from './resources.js';

/** Log lines of the last job a diagnosis shows: its end is where a failure is told. */
const LOG_TAIL = 40;

export interface PromptServices {
  stacks: StacksService;
  drift: DriftService;
  jobs: JobsService;
}

const stackIdArg = { stack_id: z.string().min(1).max(64).describe('The stack id (a UUID)') };

const json = (value: unknown): string => '```json\n' + JSON.stringify(value, null, 2) + '\n```';

/**
 * Operator prompts, registered on a per-request server for its caller: each fetches the stack's
 * facts through the services (the caller's own stacks only) and embeds them in one user message.
 * A token without orchestrator:read does not see them listed (the SDK then refuses them as disabled).
 */
export function servePrompts(server: McpServer, caller: Caller, services: PromptServices, log: Logger): void {
  const allowed = hasScope(caller.scopes, SCOPE);
  const prompts = [
    server.registerPrompt(
      'diagnose_stack',
      {
        title: 'Diagnose a stack',
        description:
          "Embeds a stack's health, drift and last job (with the tail of its log) and asks for a diagnosis and next steps.",
        argsSchema: stackIdArg,
      },
      ({ stack_id }) =>
        answer(log, 'prompt diagnose_stack', caller, () => diagnose(services, caller, stack_id)),
    ),
    server.registerPrompt(
      'deploy_stack_checklist',
      {
        title: 'Before deploying a stack',
        description:
          'Embeds what a deploy would change (the deployed and the current definition), the drift ignore rules it keeps, and any job under way, and asks for a go/no-go checklist.',
        argsSchema: stackIdArg,
      },
      ({ stack_id }) =>
        answer(log, 'prompt deploy_stack_checklist', caller, () => checklist(services, caller, stack_id)),
    ),
  ];
  if (!allowed) for (const prompt of prompts) prompt.disable();
}

const answer = (log: Logger, name: string, caller: Caller, build: () => Promise<string>) =>
  readFor(log, name, caller, ErrorCode.InvalidParams, async (): Promise<GetPromptResult> => ({
    messages: [{ role: 'user', content: { type: 'text', text: await build() } }],
  }));

async function lastJob(jobs: JobsService, caller: Caller, stackId: string): Promise<JobView | undefined> {
  return (await jobs.list(caller, { stack_id: stackId, limit: 1 })).items[0];
}

async function diagnose(services: PromptServices, caller: Caller, id: string): Promise<string> {
  const { stacks, drift, jobs } = services;
  const stack = await stacks.get(caller, id);
  const [health, drifted, job] = await Promise.all([
    stacks.health(caller, stack.id),
    drift.get(caller, stack.id),
    lastJob(jobs, caller, stack.id),
  ]);
  const tail = job ? (await allLogLines(jobs, caller, job.id)).slice(-LOG_TAIL) : [];
  return [
    `Diagnose the stack "${stack.name}" (id ${stack.id}) of the stack orchestrator. Its facts, as the service has them now:`,
    `## Stack\n${json(stack)}`,
    `## Health (from its worker's latest state report)\n${json(health)}`,
    `## Drift (its current revision against what the worker runs)\n${json(drifted)}`,
    job
      ? `## Last job\n${json(job)}\n\nThe last ${tail.length} lines of its log:\n\`\`\`\n${tail.map((l) => `${l.time} ${l.line}`).join('\n')}\n\`\`\``
      : '## Last job\nThe stack has had no job yet: it was never deployed.',
    [
      '## What to do',
      'Say whether the stack is working as its definition asks. If not: what is wrong, the most likely cause (quote the facts above that show it), and the next steps in order.',
      'Steps can use the tools: get_job_logs for more of a log, resolve_stack_drift or ignore_stack_drift for drift, deploy_stack to re-apply, cancel_job or cleanup_job for a job that is stuck, update_stack for a definition that needs a fix. Name the ones that change running services as such, and do not call them without asking.',
    ].join('\n'),
  ].join('\n\n');
}

async function checklist(services: PromptServices, caller: Caller, id: string): Promise<string> {
  const { stacks, drift, jobs } = services;
  const stack = await stacks.get(caller, id);
  const [current, drifted, job] = await Promise.all([
    stacks.revision(caller, stack.id, stack.revision),
    drift.get(caller, stack.id),
    lastJob(jobs, caller, stack.id),
  ]);
  const deployed =
    stack.deployed_revision !== null && stack.deployed_revision !== stack.revision
      ? await stacks.revision(caller, stack.id, stack.deployed_revision)
      : undefined;
  const yaml = (source: string): string => '```yaml\n' + source.trimEnd() + '\n```';
  const running =
    stack.deployed_revision === null
      ? 'Nothing is deployed yet: a deploy places the stack on a worker and starts every service.'
      : deployed
        ? `## Deployed revision ${deployed.revision} (what runs now)\n${yaml(deployed.source)}`
        : `The deployed revision is the current one (${stack.revision}): a deploy re-applies it.`;
  return [
    `Check whether to deploy the stack "${stack.name}" (id ${stack.id}) now. Its facts, as the service has them:`,
    `## Stack\n${json(stack)}`,
    `## Current revision ${current.revision} (what a deploy applies)\n${yaml(current.source)}`,
    running,
    `## Drift ignore rules (a deploy keeps these services as they are on the node)\n${json(drifted.ignored_resources)}`,
    job ? `## Last job\n${json(job)}` : '## Last job\nNone yet.',
    [
      '## What to do',
      'Give a short go/no-go checklist: which services a deploy creates, replaces or removes (compare the two definitions), what ignored services it leaves alone, whether a job still under way would make it refuse (409), and any risk you see in the definition.',
      'If it is a go and the user agrees, call deploy_stack with this id and follow the job with get_job until it has ended.',
    ].join('\n'),
  ].join('\n\n');
}
