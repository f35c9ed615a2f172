// stackctl stacks logs: a stack's service output, read once or followed (docs/stack-logs.md).
import type { ApiClient } from '../api.js';
import type { StackLogFilters } from '../args.js';
import { CliError } from '../errors.js';
import { clean, printJson } from '../output.js';
import { stackPath, unexpected } from './shared.js';
import { isStackLogLine, isStackLogPage, type StackLogLine } from './views.js';

const EVENT_STREAM = 'text/event-stream';

/** `time service stream line`, every part cleaned: the line is the service's own text. */
const lineText = (l: StackLogLine): string =>
  `${clean(l.time)} ${clean(l.service)} ${clean(l.stream)} ${clean(l.line)}`;

/**
 * The newest matching lines, oldest first; or with `follow`, those and then each new line until
 * the service ends the stream (the stack deleted, the service stopping), stdout closes, or Ctrl-C.
 * --json prints the page as one document, or, following, one JSON object per line (NDJSON).
 */
export async function printStackLogs(
  api: ApiClient,
  stackId: string,
  filters: StackLogFilters,
  follow: boolean,
  json: boolean,
): Promise<void> {
  const path = `${stackPath(stackId)}/logs`;
  if (follow) return followStackLogs(api, path, filters, json);
  const page = await api.call('GET', path, { query: { ...filters } });
  if (!isStackLogPage(page)) throw unexpected('the stack logs');
  if (json) return printJson(page);
  for (const l of page.lines) console.log(lineText(l));
  if (page.truncated && page.lines.length > 0)
    console.error(
      `Older lines matched too: read them with --until ${clean(page.lines[0].time)}, or raise --limit.`,
    );
}

/**
 * Follows as server-sent events rather than NDJSON: the service sends a keepalive comment every
 * 15 s of silence, so a quiet stack does not look like a dead connection (the CLI gives up on a
 * download after 60 s without a byte), and its last event says why it ended. When that is the
 * token's expiry, it follows on with a fresh token from the last line printed (`Last-Event-ID`).
 */
async function followStackLogs(
  api: ApiClient,
  path: string,
  filters: StackLogFilters,
  json: boolean,
): Promise<void> {
  const query = new URLSearchParams({ ...filters, follow: 'true' });
  let lastId: string | undefined;
  for (;;) {
    const download = await api.download(
      `${path}?${query.toString()}`,
      EVENT_STREAM,
      lastId === undefined ? undefined : { 'last-event-id': lastId },
    );
    const type = download.headers.get('content-type') ?? '';
    if (type.split(';')[0].trim() !== EVENT_STREAM) {
      download.cancel();
      throw new CliError(`the service answered ${type || 'no content type'} instead of ${EVENT_STREAM}.`);
    }
    // `stackctl stacks logs ID --follow | head`: a reader that has had enough ends the follow quietly.
    let readerGone = false;
    const onStdoutError = (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EPIPE') throw err;
      readerGone = true;
      download.cancel();
    };
    process.stdout.on('error', onStdoutError);
    const events = new EventReader();
    let end: string | undefined;
    try {
      for await (const chunk of download.chunks) {
        for (const event of events.push(chunk)) {
          let data: unknown;
          try {
            data = JSON.parse(event.data);
          } catch {
            throw unexpected(event.event === 'end' ? 'the end of the stream' : 'a log line');
          }
          if (event.event === 'end') {
            end =
              typeof (data as { reason?: unknown }).reason === 'string'
                ? (data as { reason: string }).reason
                : '';
            continue;
          }
          if (!isStackLogLine(data)) throw unexpected('a log line');
          console.log(json ? JSON.stringify(data) : lineText(data));
          if (event.id !== undefined) lastId = event.id;
        }
      }
    } catch (err) {
      if (readerGone) return;
      throw err;
    } finally {
      process.stdout.off('error', onStdoutError);
    }
    if (readerGone) return;
    // The token the stream was opened with expired: the next request gets a fresh one.
    if (end === 'token_expired') continue;
    const said = ENDS[end ?? ''] ?? `${clean(end ?? '')}.`;
    // A stack deleted and a service stopping are ends the follow expects; the others are failures.
    if (end !== undefined && !['stack_deleted', 'service_stopping'].includes(end))
      throw new CliError(`the service ended the stream: ${said}`);
    console.error(`The service ended the stream: ${said}`);
    return;
  }
}

/** What the service's reasons for ending a stream mean (`event: end`); none: an older service. */
const ENDS: Record<string, string> = {
  '': 'the stack was deleted or the service stopped.',
  stack_deleted: 'the stack was deleted.',
  service_stopping: 'the service is stopping.',
  client_revoked: 'this client was disabled or deleted.',
  grant_revoked: 'the grant of this token was revoked.',
  failed: 'reading the lines failed (see the service log).',
};

/** One server-sent event: its type, its `id` if it had one, and its data lines joined. */
interface ServerEvent {
  event: string;
  id: string | undefined;
  data: string;
}

/**
 * Server-sent events out of a byte stream: the `line` and `end` events, in order; comments
 * (keepalives), other events and other fields are skipped. An event ends at a blank line.
 */
class EventReader {
  private readonly decoder = new TextDecoder();
  private buffer = '';

  push(chunk: Uint8Array): ServerEvent[] {
    this.buffer += this.decoder.decode(chunk, { stream: true }).replaceAll('\r\n', '\n');
    const found: ServerEvent[] = [];
    for (let end = this.buffer.indexOf('\n\n'); end >= 0; end = this.buffer.indexOf('\n\n')) {
      const block = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end + 2);
      let event = 'message';
      let id: string | undefined;
      const data: string[] = [];
      for (const field of block.split('\n')) {
        if (field.startsWith(':')) continue;
        const colon = field.indexOf(':');
        const name = colon < 0 ? field : field.slice(0, colon);
        const value = colon < 0 ? '' : field.slice(colon + 1).replace(/^ /, '');
        if (name === 'event') event = value;
        else if (name === 'id') id = value;
        else if (name === 'data') data.push(value);
      }
      if ((event === 'line' || event === 'end') && data.length > 0)
        found.push({ event, id, data: data.join('\n') });
    }
    return found;
  }
}
