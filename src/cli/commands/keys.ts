import type { ApiClient } from '../api.js';
import type { Command } from '../args.js';
import { clean, printJson, table } from '../output.js';
import { KEYS, unexpected } from './shared.js';
import { isKeyList, isKeyRotation } from './views.js';

/** stackctl keys …: one command each, over the HTTP API. */
export async function runKeys(
  api: ApiClient,
  command: Extract<Command, { name: `keys ${string}` }>,
  json: boolean,
): Promise<void> {
  switch (command.name) {
    case 'keys list': {
      const answer = await api.call('GET', KEYS);
      if (!isKeyList(answer)) throw unexpected('the key list');
      if (json) return printJson(answer);
      console.log(
        table(
          ['KID', 'ALG', 'STATUS', 'CREATED_AT', 'PUBLISH_UNTIL'],
          answer.keys.map((k) => [k.kid, k.alg, k.status, k.created_at, k.publish_until ?? '-']),
        ),
      );
      return;
    }
    case 'keys rotate': {
      const answer = await api.call('POST', `${KEYS}/rotate`);
      if (!isKeyRotation(answer)) throw unexpected('the rotation');
      if (json) return printJson(answer);
      console.log(`Signing key rotated. New key: ${clean(answer.kid)}`);
      console.log(
        answer.retired.length === 0
          ? 'No key was retired.'
          : `Retired (still published until the tokens they signed expire): ${clean(answer.retired.join(', '))}`,
      );
      return;
    }
  }
}
