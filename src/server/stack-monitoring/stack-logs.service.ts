import { Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
import { Readable } from 'node:stream';
import type { StackLogLine, StackLogPage } from '../../contracts/api/stack-logs.js';
import { TokenCache, type TokenEnd } from '../auth/token-cache.js';
import { AppError, ValidationFailedError } from '../common/app-error.js';
import type { Caller } from '../common/request-context.js';
import { StacksService } from '../stacks/stacks.service.js';
import type { StackLogsDto } from './dto/stack-logs.dto.js';
import { logQuery, type LogQuery } from './log-query.js';
import { StackLogWriter } from './stack-log-writer.js';
import { StackLogsRepository, type LogLineRow } from './stack-logs.repository.js';

/** Followed streams one replica serves at once; more are refused with 429. */
export const MAX_FOLLOWERS = 100;
/** A follower looks for new lines this often (lines written through other replicas), and at once when this replica wrote some. */
const POLL_MS = 1_000;
/** Lines a follower reads per look. */
const FOLLOW_BATCH = 1_000;
/** How often a follower checks its stack still exists (the stream ends with it). */
const STACK_CHECK_MS = 10_000;
/** A comment line that keeps server-sent event streams (and the proxies on their way) open. */
const SSE_KEEPALIVE_MS = 15_000;

/** How a followed stream is written: NDJSON, or server-sent events. */
export type FollowFormat = 'ndjson' | 'sse';

/**
 * Why the service ended a followed stream, the `reason` of the `end` event that closes a
 * server-sent event stream: its token stopped verifying, the stack was deleted, the service is
 * stopping, or reading the lines failed.
 */
export type FollowEnd = TokenEnd | 'stack_deleted' | 'service_stopping' | 'failed';

/** A line's position as `Last-Event-ID` gives it back: what the `id:` of an event said. */
const LINE_ID = /^[0-9]{1,18}$/;

const view = (row: LogLineRow): StackLogLine => ({
  time: row.time.toISOString(),
  service: row.service,
  worker_id: row.worker_id,
  stream: row.stream,
  line: row.line,
});

/**
 * The stacks' service output (docs/stack-logs.md): reads of the newest matching lines, and
 * followed streams that send those, then each new line as it arrives, until the client goes, the
 * stack is deleted or the service stops. The stack must be the caller's (404 otherwise).
 */
@Injectable()
export class StackLogsService implements OnModuleDestroy {
  private readonly logger = new Logger('stack-monitoring');
  private followers = 0;
  private readonly stopping = new AbortController();

  constructor(
    private readonly repository: StackLogsRepository,
    private readonly writer: StackLogWriter,
    private readonly stacks: StacksService,
    private readonly tokens: TokenCache,
  ) {}

  /** Followed streams this replica serves now. */
  get streaming(): number {
    return this.followers;
  }

  /** Ends every followed stream, so shutdown does not wait for their clients. */
  onModuleDestroy(): void {
    this.stopping.abort();
  }

  /** The newest `limit` lines that match, oldest first. */
  async read(caller: Caller, id: string, dto: StackLogsDto): Promise<StackLogPage> {
    const stack = await this.stacks.owned(caller, id);
    const query = logQuery(stack.id, dto);
    await this.writer.flush();
    const rows = await this.repository.newest(query.filter, query.limit + 1);
    return {
      stack_id: stack.id,
      lines: rows.slice(0, query.limit).reverse().map(view),
      truncated: rows.length > query.limit,
    };
  }

  /**
   * A followed stream: the newest `limit` lines that match, then every new one. Refused (before
   * anything is sent) when the stack is not the caller's, the query is wrong, or this replica
   * already serves MAX_FOLLOWERS streams.
   */
  /**
   * `after`: the id of the last line the client got (`Last-Event-ID`), to go on from there after a
   * reconnect: every matching line after it, no backlog of the newest.
   */
  async follow(
    caller: Caller,
    id: string,
    dto: StackLogsDto,
    format: FollowFormat,
    after?: string,
  ): Promise<Readable> {
    if (after !== undefined && !LINE_ID.test(after))
      throw new ValidationFailedError([
        { path: 'Last-Event-ID', message: 'must be the id of a line: digits, as an event gave it' },
      ]);
    const stack = await this.stacks.owned(caller, id);
    const query = logQuery(stack.id, dto);
    if (this.followers >= MAX_FOLLOWERS)
      throw new AppError(
        429,
        'rate_limited',
        'Too Many Requests',
        `This replica already streams ${MAX_FOLLOWERS} logs; try again later.`,
        undefined,
        { 'Retry-After': '10' },
      );
    this.followers++;
    let cursor: string;
    let backlog: LogLineRow[];
    try {
      await this.writer.flush();
      if (after !== undefined) {
        cursor = after;
        backlog = [];
      } else {
        cursor = await this.repository.lastId(stack.id);
        backlog = (await this.repository.newest(query.filter, query.limit, cursor)).reverse();
      }
    } catch (err) {
      this.followers--;
      throw err;
    }
    const done = new AbortController();
    // The stream ends when its token stops verifying: it expired, its client was disabled or
    // deleted, or its grant revoked. A client that follows on reconnects with a fresh token.
    const valid = this.tokens.validity(caller);
    const ended = AbortSignal.any([done.signal, valid.signal]);
    let pull: (() => void) | undefined;
    const stream = new Readable({
      read: () => pull?.(),
      destroy: (err, callback) => {
        done.abort();
        callback(err);
      },
    });
    const encode = format === 'sse' ? sseEvent : ndjsonLine;
    /** Pushes text; resolves once the client reads on (or went away). */
    const push = async (text: string): Promise<void> => {
      if (stream.push(text) || ended.aborted) return;
      await new Promise<void>((resolve) => {
        pull = resolve;
        ended.addEventListener('abort', () => resolve(), { once: true });
      });
      pull = undefined;
    };
    let failed = false;
    void this.stream(stack.id, query, cursor, backlog, encode, push, format, ended)
      .catch((err: unknown) => {
        failed = true;
        this.logger.warn({ err, stack_id: stack.id }, 'log stream failed');
      })
      .finally(() => {
        const reason: FollowEnd = valid.signal.aborted
          ? (valid.signal.reason as TokenEnd)
          : this.stopping.signal.aborted
            ? 'service_stopping'
            : failed
              ? 'failed'
              : 'stack_deleted';
        if (valid.signal.aborted)
          this.logger.log(
            { stack_id: stack.id, client_id: caller.clientId, reason },
            'followed log ended: its token no longer verifies',
          );
        valid.release();
        this.followers--;
        if (stream.destroyed) return;
        // A server-sent event stream says why it ends, so a client can tell a token to renew (and go
        // on with Last-Event-ID) from a stack that is gone.
        if (format === 'sse') stream.push(`event: end\ndata: ${JSON.stringify({ reason })}\n\n`);
        stream.push(null);
      });
    return stream;
  }

  private async stream(
    stackId: string,
    query: LogQuery,
    from: string,
    backlog: LogLineRow[],
    encode: (row: LogLineRow) => string,
    push: (text: string) => Promise<void>,
    format: FollowFormat,
    done: AbortSignal,
  ): Promise<void> {
    const ended = AbortSignal.any([done, this.stopping.signal]);
    let cursor = from;
    if (format === 'sse') await push(': following\n\n');
    if (backlog.length > 0) await push(backlog.map(encode).join(''));
    let wake: (() => void) | undefined;
    const written = (id: string) => {
      if (id === stackId) wake?.();
    };
    this.writer.events.on('written', written);
    let checked = Date.now();
    let spoke = Date.now();
    try {
      while (!ended.aborted) {
        const rows = await this.repository.after(query.filter, cursor, FOLLOW_BATCH);
        if (rows.length > 0) {
          cursor = rows[rows.length - 1].id;
          await push(rows.map(encode).join(''));
          spoke = Date.now();
          if (rows.length === FOLLOW_BATCH) continue;
        }
        if (Date.now() - checked >= STACK_CHECK_MS) {
          checked = Date.now();
          if ((await this.stacks.find(stackId)) === null) return;
        }
        if (format === 'sse' && Date.now() - spoke >= SSE_KEEPALIVE_MS) {
          await push(': keepalive\n\n');
          spoke = Date.now();
        }
        await new Promise<void>((resolve) => {
          const timer = setTimeout(finish, POLL_MS);
          function finish() {
            clearTimeout(timer);
            ended.removeEventListener('abort', finish);
            resolve();
          }
          wake = finish;
          ended.addEventListener('abort', finish, { once: true });
        });
        wake = undefined;
      }
    } finally {
      this.writer.events.off('written', written);
    }
  }
}

const ndjsonLine = (row: LogLineRow): string => `${JSON.stringify(view(row))}\n`;

/** One server-sent event per line; its id is the line's position, for the client's bookkeeping. */
const sseEvent = (row: LogLineRow): string =>
  `id: ${row.id}\nevent: line\ndata: ${JSON.stringify(view(row))}\n\n`;
