import { createHash } from "node:crypto";
import { Code } from "@connectrpc/connect";
import { fieldErrors } from "../errors/api-errors.ts";

// Page sizes and page tokens of every list (AIP-158). A token is the position after the last
// item of its page (keyset pagination: never an offset, so concurrent inserts neither repeat nor
// skip items) plus a fingerprint of the list and its filters, so a token cannot be used with
// other filters. Opaque to clients (base64url JSON), not secret: every list query is confined to
// the caller's account whatever the token says.

export interface PageSizes {
  /** Taken for page_size 0. */
  default: number;
  /** Larger requests are taken as this. */
  max: number;
}

export const MESSAGE_PAGES: PageSizes = { default: 100, max: 1000 };
/**
 * A batch holds at most 10000 messages, which GET /sms-batch/{id} answers inline: one page may
 * hold them all (a page of the (batchId, _id) index), instead of ten round trips through the
 * services for the REST answer.
 */
export const BATCH_MESSAGE_PAGES: PageSizes = { default: 100, max: 10_000 };
/** An account holds at most 100 sender names: one default page holds them all. */
export const SENDER_NAME_PAGES: PageSizes = { default: 100, max: 100 };

export function pageSize(requested: number, sizes: PageSizes): number {
  if (requested < 0) {
    throw fieldErrors(Code.InvalidArgument, { page_size: "page_size must not be negative" });
  }
  if (requested === 0) return sizes.default;
  return Math.min(requested, sizes.max);
}

/** A page of `limit` items out of `found` (limit + 1 read), and the token of the next. */
export function paged<T>(found: T[], limit: number, next: (last: T) => string): [T[], string] {
  if (found.length <= limit) return [found, ""];
  const page = found.slice(0, limit);
  return [page, next(page[page.length - 1] as T)];
}

/** Where the next page starts: the last item's sort key. */
export type Cursor = (string | number)[];

interface TokenBody {
  /** Fingerprint of the list and its filters. */
  f: string;
  /** The cursor. */
  c: Cursor;
}

/** `scope` names the list and its filters, e.g. `ListMessages` and the request's filter fields. */
export function pageToken(scope: unknown, cursor: Cursor): string {
  const body: TokenBody = { f: fingerprint(scope), c: cursor };
  return Buffer.from(JSON.stringify(body)).toString("base64url");
}

/** The cursor of a token from `pageToken` for the same scope; undefined for "" (first page). */
export function cursorOf(token: string, scope: unknown, shape: CursorShape): Cursor | undefined {
  if (token === "") return undefined;
  let body: TokenBody | undefined;
  try {
    body = JSON.parse(Buffer.from(token, "base64url").toString("utf8")) as TokenBody;
  } catch {
    body = undefined;
  }
  if (!body || typeof body !== "object" || !Array.isArray(body.c) || !fits(body.c, shape)) {
    throw invalidToken("page_token is not a token this list answered");
  }
  if (body.f !== fingerprint(scope)) {
    throw invalidToken(
      "page_token belongs to another list or other filters: send the same filters as for the first page",
    );
  }
  return body.c;
}

/** The types of a cursor's items, in order. */
export type CursorShape = ("string" | "number")[];

function fits(cursor: unknown[], shape: CursorShape): boolean {
  return (
    cursor.length === shape.length &&
    cursor.every((item, i) =>
      shape[i] === "number" ? Number.isSafeInteger(item) : typeof item === "string",
    )
  );
}

function fingerprint(scope: unknown): string {
  return createHash("sha256")
    .update(
      JSON.stringify(scope, (_key, value) => (typeof value === "bigint" ? `${value}` : value)),
    )
    .digest("base64url")
    .slice(0, 16);
}

const invalidToken = (message: string) =>
  fieldErrors(Code.InvalidArgument, { page_token: message }, { reason: "PAGE_TOKEN_INVALID" });
