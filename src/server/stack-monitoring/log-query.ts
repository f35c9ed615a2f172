import { ValidationFailedError } from '../common/app-error.js';
import { parseDuration } from '../common/duration.js';
import { parseRfc3339 } from '../common/rfc3339.js';
import type { StackLogsDto } from './dto/stack-logs.dto.js';
import type { LogFilter } from './stack-logs.repository.js';

export const MAX_LOG_LIMIT = 10_000;
export const DEFAULT_LOG_LIMIT = 100;
const DURATION_WITH_UNITS = /^(\d+(ms|s|m|h|d))+$/;

/** What a logs request asks for, its times read. */
export interface LogQuery {
  filter: LogFilter;
  limit: number;
  follow: boolean;
}

/**
 * `since` and `until` as times: RFC 3339, or a duration with units back from `now` (`15m`, `2h`,
 * `7d`); `since` after `until`, or `until` with `follow`, is refused. Errors are 422 field errors.
 */
export function logQuery(stackId: string, dto: StackLogsDto, now = Date.now()): LogQuery {
  const errors: { path: string; message: string }[] = [];
  const time = (key: 'since' | 'until'): Date | undefined => {
    const text = dto[key];
    if (text === undefined) return undefined;
    const at = parseRfc3339(text);
    if (at !== undefined) return new Date(at);
    const back = DURATION_WITH_UNITS.test(text) ? parseDuration(text) : undefined;
    if (back !== undefined) return new Date(now - back);
    errors.push({
      path: key,
      message: `${key} must be an RFC 3339 time such as 2026-11-01T10:00:00Z, or a duration back from now such as 15m or 2h`,
    });
    return undefined;
  };
  const since = time('since');
  const until = time('until');
  if (since !== undefined && until !== undefined && since > until)
    errors.push({ path: 'since', message: 'since must not be after until' });
  if (dto.follow === true && dto.until !== undefined)
    errors.push({ path: 'until', message: 'a followed stream has no end: leave out until' });
  if (errors.length > 0) throw new ValidationFailedError(errors);
  return {
    filter: { stackId, service: dto.service, since, until },
    limit: dto.limit ?? DEFAULT_LOG_LIMIT,
    follow: dto.follow === true,
  };
}
