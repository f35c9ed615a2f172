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
 * download after 60 s without a byte).
 */
async function followStackLogs(
  api: ApiClient,
  path: string,
  filters: StackLogFilters,
  json: boolean,
): Promise<void> {
  const query = new URLSearchParams({ ...filters, follow: 'true' });
  const download = await api.download(`${path}?${query.toString()}`, EVENT_STREAM);
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
  try {
    for await (const chunk of download.chunks) {
      for (const data of events.push(chunk)) {
        let line: unknown;
        try {
          line = JSON.parse(data);
        } catch {
          throw unexpected('a log line');
        }
        if (!isStackLogLine(line)) throw unexpected('a log line');
        console.log(json ? JSON.stringify(line) : lineText(line));
      }
    }
  } catch (err) {
    if (readerGone) return;
    throw err;
  } finally {
    process.stdout.off('error', onStdoutError);
  }
  if (!readerGone)
    console.error('The service ended the stream: the stack was deleted or the service stopped.');
}

/**
 * Server-sent events out of a byte stream: the `data` of each `line` event, in order; comments
 * (keepalives) and other fields are skipped. An event ends at a blank line.
 */
class EventReader {
  private readonly decoder = new TextDecoder();
  private buffer = '';

  push(chunk: Uint8Array): string[] {
    this.buffer += this.decoder.decode(chunk, { stream: true }).replaceAll('\r\n', '\n');
    const found: string[] = [];
    for (let end = this.buffer.indexOf('\n\n'); end >= 0; end = this.buffer.indexOf('\n\n')) {
      const block = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end + 2);
      let event = 'message';
      const data: string[] = [];
      for (const field of block.split('\n')) {
        if (field.startsWith(':')) continue;
        const colon = field.indexOf(':');
        const name = colon < 0 ? field : field.slice(0, colon);
        const value = colon < 0 ? '' : field.slice(colon + 1).replace(/^ /, '');
        if (name === 'event') event = value;
        else if (name === 'data') data.push(value);
      }
      if (event === 'line' && data.length > 0) found.push(data.join('\n'));
    }
    return found;
  }
}
