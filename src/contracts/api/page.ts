// Cursor pagination, the same for every list (docs/api.md).

/** `?limit=&cursor=`: at most 200 items a page (50 without `limit`); `cursor` from the last page. */
export interface PageQuery {
  limit?: number;
  cursor?: string;
}

/** One page of a list: the items under the list's own key, and the next page's cursor (null on the last). */
export type ListPage<Key extends string, Item> = { [K in Key]: Item[] } & { next_cursor: string | null };
