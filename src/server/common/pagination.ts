import { Type } from 'class-transformer';
import { IsInt, IsString, Max, MaxLength, Min } from 'class-validator';
import { Optional } from './optional.js';
import { ValidationFailedError } from './app-error.js';
import type { PageQuery } from '../../contracts/api/page.js';

export const DEFAULT_PAGE_SIZE = 50;
export const MAX_PAGE_SIZE = 200;

/** `?limit=&cursor=` for cursor-paginated lists. */
export class PageQueryDto implements PageQuery {
  @Optional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(MAX_PAGE_SIZE)
  limit?: number;

  @Optional()
  @IsString()
  @MaxLength(512)
  cursor?: string;
}

/** A position in a list ordered by (time, id) descending or ascending. */
export interface Cursor {
  at: string;
  id: string;
}

export function encodeCursor(cursor: Cursor): string {
  return Buffer.from(JSON.stringify([cursor.at, cursor.id])).toString('base64url');
}

export function decodeCursor(text: string | undefined): Cursor | undefined {
  if (text === undefined) return undefined;
  try {
    const value: unknown = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
    if (
      Array.isArray(value) &&
      value.length === 2 &&
      typeof value[0] === 'string' &&
      typeof value[1] === 'string'
    ) {
      const iso = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/.test(value[0]);
      if (iso && !Number.isNaN(Date.parse(value[0])) && /^[A-Za-z0-9_.-]{1,128}$/.test(value[1])) {
        return { at: value[0], id: value[1] };
      }
    }
  } catch {
    // fall through
  }
  throw new ValidationFailedError([{ path: 'cursor', message: 'cursor is not one this service issued' }]);
}

export interface Page<T> {
  items: T[];
  next_cursor: string | null;
}

/** The cursor of a row ordered by its creation time and id. */
export const byCreation = (row: { createdAt: Date; id: string }): Cursor => ({
  at: row.createdAt.toISOString(),
  id: row.id,
});

/**
 * One page of a list ordered by (time, id): `fetch` is asked for one row more than the page holds,
 * so a next cursor is given exactly when there is a next page. `view` turns rows into items, one
 * after the other.
 */
export async function cursorPage<R, V>(
  query: { limit?: number; cursor?: string },
  fetch: (take: number, after: Cursor | undefined) => Promise<R[]>,
  position: (row: R) => Cursor,
  view: (row: R) => V | Promise<V>,
): Promise<Page<V>> {
  const limit = query.limit ?? DEFAULT_PAGE_SIZE;
  const rows = await fetch(limit + 1, decodeCursor(query.cursor));
  const items: V[] = [];
  for (const row of rows.slice(0, limit)) items.push(await view(row));
  const last = rows.length > limit ? rows[limit - 1] : undefined;
  return { items, next_cursor: last ? encodeCursor(position(last)) : null };
}
