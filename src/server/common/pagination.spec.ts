import 'reflect-metadata';
import { describe, expect, it } from 'vitest';
import { ValidationFailedError } from './app-error.js';
import { byCreation, cursorPage, decodeCursor, encodeCursor, type Cursor } from './pagination.js';

const rows = Array.from({ length: 5 }, (_, i) => ({
  id: `r${i}`,
  createdAt: new Date(Date.UTC(2026, 0, 1, 0, 0, 5 - i)),
}));

/** A list newest first, as the repositories give it: rows after the cursor, at most `take`. */
const fetch = (take: number, after: Cursor | undefined) => {
  const start = after ? rows.findIndex((r) => r.id === after.id) + 1 : 0;
  return Promise.resolve(rows.slice(start, start + take));
};

describe('cursorPage', () => {
  it('pages through a list without overlap, with a cursor exactly while more rows follow', async () => {
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await cursorPage({ limit: 2, cursor }, fetch, byCreation, (r) => r.id);
      seen.push(...page.items);
      cursor = page.next_cursor ?? undefined;
      pages += 1;
    } while (cursor);
    expect(seen).toEqual(['r0', 'r1', 'r2', 'r3', 'r4']);
    expect(pages).toBe(3);
    const whole = await cursorPage({ limit: 5 }, fetch, byCreation, (r) => r.id);
    expect(whole.next_cursor).toBeNull();
  });

  it('refuses a cursor it did not issue', async () => {
    await expect(cursorPage({ cursor: 'not-ours' }, fetch, byCreation, (r) => r.id)).rejects.toBeInstanceOf(
      ValidationFailedError,
    );
    const issued = encodeCursor(byCreation(rows[1]));
    expect(decodeCursor(issued)).toEqual({ at: rows[1].createdAt.toISOString(), id: 'r1' });
  });
});
