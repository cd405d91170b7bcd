import { ConnectError } from "@connectrpc/connect";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { Config } from "../config/config.ts";
import { fieldErrorsOf } from "../errors/api-errors.ts";
import type { RateLimits } from "../rate-limits/rate-limits.ts";
import { forwardServiceHeaders } from "../rest/call-options.ts";
import { httpStatusOf } from "../rest/error-handler.ts";
import { restParameter } from "../rest/parameter-names.ts";
import type { ServiceClients } from "../rest/service-clients.ts";
import type { AccountDirectory, AccountView } from "../services/account-directory.ts";
import type { DashboardSessions } from "../store/dashboard-sessions.ts";
import type { Store } from "../store/database.ts";

// What the page modules (*-pages.ts) are handed by dashboard.ts and share: the dashboard's handle
// and a service refusal shown as a page's errors. Kept apart from dashboard.ts, which registers
// the page modules, so that no page module imports the module that imports it.

export interface DashboardDeps {
  clients: ServiceClients;
  directory: AccountDirectory;
  store: Store;
  /** The sessions on the server: signing out ends them on every instance. */
  sessions: DashboardSessions;
  /** The account's request limit, which every signed-in page counts toward like a request. */
  limits: RateLimits | undefined;
  config: Pick<
    Config,
    "dashboardSessionKey" | "dashboardSessionMinutes" | "production" | "requestTimeoutMs"
  >;
}

/** Errors in the spec's shape, `{field: [messages]}`, shown above a form. */
export type FieldErrorList = Record<string, string[]>;

/** A page handler for a signed-in account. */
export type AccountHandler = (
  request: FastifyRequest,
  reply: FastifyReply,
  account: AccountView,
) => Promise<unknown>;

export interface Dashboard {
  deps: DashboardDeps;
  /** Renders `page` inside the layout, with a fresh CSRF token for its forms. */
  render(
    reply: FastifyReply,
    page: string,
    data: Record<string, unknown>,
    account?: AccountView,
  ): FastifyReply;
  /**
   * Runs `handler` for the signed-in account, counted against its request limit (a 429 page
   * over it), or sends the browser to the sign-in page.
   */
  signedIn(handler: AccountHandler): (request: FastifyRequest, reply: FastifyReply) => unknown;
}

/**
 * A service refusal's HTTP status and its errors in the spec's shape, its retry hints copied onto
 * `reply` as REST does; anything but a service error is thrown again.
 */
export function serviceErrors(
  error: unknown,
  reply: FastifyReply,
): { status: number; errors: FieldErrorList } {
  if (error instanceof ConnectError) {
    forwardServiceHeaders(error.metadata, reply);
    const status = httpStatusOf(error) ?? 500;
    if (status >= 500 && status !== 503) {
      return { status, errors: { request: ["internal error; please retry later"] } };
    }
    const errors: FieldErrorList = {};
    for (const { field, message } of fieldErrorsOf(error)) {
      const name = restParameter(field);
      errors[name] = [...(errors[name] ?? []), message];
    }
    if (Object.keys(errors).length === 0) errors.request = [error.rawMessage];
    return { status, errors };
  }
  throw error;
}

/** A form or query field as text, trimmed; anything else (absent, repeated) as empty. */
export const fieldText = (value: unknown): string =>
  typeof value === "string" ? value.trim() : "";

/** A resource id in a path: a positive integer. */
export const ID = /^[1-9][0-9]{0,15}$/;

// What an <input type="datetime-local"> sends, read as UTC.
const LOCAL_TIME = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2})(:\d{2}(\.\d{1,3})?)?$/;

/** A datetime-local field's value as a UTC time; undefined when it is not one. */
export function utcTimeOf(value: string): Date | undefined {
  const match = LOCAL_TIME.exec(value);
  const time = match ? new Date(`${match[1]}T${match[2]}${match[3] ?? ":00"}Z`) : undefined;
  return time && !Number.isNaN(time.getTime()) ? time : undefined;
}

export const timeFieldError = (field: string): string =>
  `${field} must be a date and time, YYYY-MM-DDTHH:MM (UTC)`;

/** The 400 page of a path id that cannot be one. */
export function badId(
  dashboard: Dashboard,
  reply: FastifyReply,
  account: AccountView,
  kind: string,
): FastifyReply {
  return dashboard.render(
    reply.code(400),
    "error",
    { title: "Error 400", errors: { id: [`id must be a ${kind} id: a positive integer`] } },
    account,
  );
}

/**
 * A search page (`view`, its rows as `it.messages`): the form's fields as `built` (400 with the
 * errors of the bad ones), one list call, and the next page's link with the same filters.
 */
export async function searchPage<Search extends Record<keyof Search, string>, Request, Row>(
  dashboard: Dashboard,
  reply: FastifyReply,
  account: AccountView,
  view: { name: string; data: Record<string, unknown> },
  /** The form's fields, `page` the list's page token. */
  search: Search,
  built: { request: Request } | { errors: FieldErrorList },
  list: (request: Request) => Promise<{ rows: Row[]; nextPageToken: string }>,
): Promise<FastifyReply> {
  const page = { ...view.data, search, messages: [] as Row[], next: "", errors: {} };
  if ("errors" in built) {
    return dashboard.render(reply.code(400), view.name, { ...page, errors: built.errors }, account);
  }
  try {
    const found = await list(built.request);
    page.messages = found.rows;
    if (found.nextPageToken !== "") {
      const next = new URLSearchParams(Object.entries(search));
      next.set("page", found.nextPageToken);
      page.next = next.toString();
    }
  } catch (error) {
    const { status, errors } = serviceErrors(error, reply);
    return dashboard.render(reply.code(status), view.name, { ...page, errors }, account);
  }
  return dashboard.render(reply, view.name, page, account);
}
