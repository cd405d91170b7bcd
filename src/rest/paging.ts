// Paging of the REST lists (AIP-158, as the services page): a list takes `pageToken`, the
// previous page's `nextPageToken` (absent for the first), and answers a page of items under its
// own name with `nextPageToken`, empty on the last page. The page size is the service's default.

/** The `pageToken` query parameter. */
export const pageTokenParameter = (
  description = "nextPageToken of the previous page; absent for the first",
) => ({ type: "string", description }) as const;

/** The 200 answer of a list: `{<key>: [items], nextPageToken}`. */
export const pageResponse = <K extends string, I>(description: string, key: K, items: I) =>
  ({
    description,
    type: "object",
    required: [key, "nextPageToken"],
    properties: {
      [key]: { type: "array", items },
      nextPageToken: { type: "string", description: "Empty on the last page" },
    },
  }) as const;

export interface PageQuery {
  pageToken?: string;
}

/** A list request's paging fields, from the REST query. */
export const pageRequest = (query: PageQuery) => ({ pageToken: query.pageToken ?? "" });

/** A REST page: `items` under `key`, and the service page's token of the next one. */
export const restPage = <K extends string, T>(
  key: K,
  items: T[],
  { nextPageToken }: { nextPageToken: string },
) => ({ [key]: items, nextPageToken }) as Record<K, T[]> & { nextPageToken: string };
