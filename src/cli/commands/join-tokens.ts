import type { ApiClient } from '../api.js';
import type { Command } from '../args.js';
import { clean, printJson, table } from '../output.js';
import { JOIN_TOKENS, listAll, formatLabels, unexpected } from './shared.js';
import type { CreateJoinTokenRequest } from '../../contracts/api/index.js';
import { isCreatedJoinToken, isJoinToken } from './views.js';

/** stackctl join-tokens …: one command each, over the HTTP API. */
export async function runJoinTokens(
  api: ApiClient,
  command: Extract<Command, { name: `join-tokens ${string}` }>,
  json: boolean,
): Promise<void> {
  switch (command.name) {
    case 'join-tokens create': {
      const body: CreateJoinTokenRequest = {
        ttl: command.ttl,
        pre_approved: command.preApproved,
        labels: command.labels,
      };
      const created = await api.call('POST', JOIN_TOKENS, { body });
      if (!isCreatedJoinToken(created)) throw unexpected('the new join token');
      if (json) return printJson(created);
      console.log(`Created join token ${clean(created.id)}.`);
      console.log(`token:        ${clean(created.token)}`);
      console.log(`expires_at:   ${clean(created.expires_at)}`);
      console.log(
        `pre_approved: ${created.pre_approved ? 'yes (its workers need no approval)' : 'no (approve its workers with "stackctl workers approve")'}`,
      );
      console.log(`labels:       ${clean(formatLabels(created.labels))}`);
      console.log(
        'The token is shown only once: store it now. The service keeps only its hash. Agents enroll with it until it expires or is revoked.',
      );
      return;
    }
    case 'join-tokens list': {
      const tokens = await listAll(api, JOIN_TOKENS, 'join_tokens', {}, isJoinToken, 'the join token list');
      if (json) return printJson({ join_tokens: tokens });
      if (tokens.length === 0) {
        console.log('No join tokens.');
        return;
      }
      console.log(
        table(
          ['ID', 'PRE_APPROVED', 'LABELS', 'USES', 'CREATED_AT', 'EXPIRES_AT', 'EXPIRED', 'REVOKED_AT'],
          tokens.map((j) => [
            j.id,
            j.pre_approved ? 'yes' : 'no',
            formatLabels(j.labels),
            String(j.uses),
            j.created_at,
            j.expires_at,
            j.expired ? 'yes' : 'no',
            j.revoked_at ?? '-',
          ]),
        ),
      );
      return;
    }
    case 'join-tokens revoke':
      await api.call('DELETE', `${JOIN_TOKENS}/${encodeURIComponent(command.id)}`);
      if (!json) console.log(`Revoked join token ${clean(command.id)}.`);
      return;
  }
}
