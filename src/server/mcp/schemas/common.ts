import * as z from 'zod/v4';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../../common/pagination.js';

/** Zod pieces the output schemas share, mirroring `src/contracts/api/common.ts` and `page.ts`. */
export const timestamp = () => z.string().describe('ISO 8601 time, UTC');
export const labels = () => z.record(z.string(), z.string());
export const nextCursor = () =>
  z.string().nullable().describe('Pass as cursor for the next page; null on the last page');

/** A page query's arguments, with PageQueryDto's bounds. */
export const pageArgs = {
  limit: z
    .number()
    .int()
    .min(1)
    .max(MAX_PAGE_SIZE)
    .optional()
    .describe(`Items per page, 1 to ${MAX_PAGE_SIZE} (default ${DEFAULT_PAGE_SIZE})`),
  cursor: z.string().max(512).optional().describe('next_cursor of the previous page'),
};
