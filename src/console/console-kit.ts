import { type Client, ConnectError } from "@connectrpc/connect";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { AdminService } from "../../gen/sms/admin/v1/admin_pb.ts";
import type { Config } from "../config/config.ts";
import { fieldErrorsOf } from "../errors/api-errors.ts";
import type { RateLimits } from "../rate-limits/rate-limits.ts";
import { httpStatusOf } from "../rest/error-handler.ts";
import type { DashboardSessions } from "../store/dashboard-sessions.ts";
import type { Store } from "../store/database.ts";

// What the console's page modules share (docs/design.md "Accounts, API keys and the operator
// console"): the AdminService client every action goes through, the signed-in operator, a page's
// rendering with its CSRF token, and a service refusal shown as the page's errors.

export interface ConsoleDeps {
  /** AdminService on the in-process transport: every action of the console is one of its calls. */
  admin: Client<typeof AdminService>;
  store: Store;
  /** The operators' sessions on the server (a collection of their own). */
  sessions: DashboardSessions;
  limits: RateLimits | undefined;
  config: Pick<
    Config,
    "adminToken" | "dashboardSessionKey" | "dashboardSessionMinutes" | "production"
  >;
}

export interface Operator {
  name: string;
  /** The call options of an AdminService call made for this operator from this request. */
  call: {
    headers: Record<string, string>;
    contextValues: import("@connectrpc/connect").ContextValues;
  };
}

export type OperatorHandler = (
  request: FastifyRequest,
  reply: FastifyReply,
  operator: Operator,
) => Promise<unknown>;

export interface Console {
  deps: ConsoleDeps;
  render(
    reply: FastifyReply,
    page: string,
    data: Record<string, unknown>,
    operator?: Operator,
  ): FastifyReply;
  signedIn(handler: OperatorHandler): (request: FastifyRequest, reply: FastifyReply) => unknown;
}

export type FieldErrorList = Record<string, string[]>;

/** A service refusal as the page's status and errors; anything else is thrown again. */
export function refusal(error: unknown): { status: number; errors: FieldErrorList } {
  if (!(error instanceof ConnectError)) throw error;
  const status = httpStatusOf(error) ?? 500;
  if (status >= 500 && status !== 503) {
    return { status, errors: { request: ["internal error; please retry later"] } };
  }
  const errors: FieldErrorList = {};
  for (const { field, message } of fieldErrorsOf(error)) {
    errors[field] = [...(errors[field] ?? []), message];
  }
  if (Object.keys(errors).length === 0) errors.request = [error.rawMessage];
  return { status, errors };
}

/**
 * Renders `view` with `data` and what `load` reads for it (rows, next page), showing `errors` with
 * `status`; a service refusal while reading shows the view with the refusal's status and errors.
 */
export async function loadedPage(
  console: Console,
  reply: FastifyReply,
  operator: Operator,
  view: string,
  data: Record<string, unknown>,
  load: () => Promise<Record<string, unknown>>,
  errors: FieldErrorList = {},
  status = 200,
): Promise<FastifyReply> {
  let loaded: Record<string, unknown>;
  try {
    loaded = await load();
  } catch (error) {
    const refused = refusal(error);
    return console.render(
      reply.code(refused.status),
      view,
      { ...data, errors: refused.errors },
      operator,
    );
  }
  return console.render(reply.code(status), view, { ...data, ...loaded, errors }, operator);
}

/** The query of a list's next page, its filters kept; empty on the last page. */
export const nextPageQuery = (pageToken: string, filters: Record<string, string> = {}): string =>
  pageToken ? new URLSearchParams({ ...filters, page: pageToken }).toString() : "";

/** A form field as trimmed text; anything else (absent, repeated) as empty. */
export const field = (body: unknown, name: string): string => {
  const value = (body as Record<string, unknown> | undefined)?.[name];
  return typeof value === "string" ? value.trim() : "";
};

/** Runs an AdminService action of a form; on a refusal, renders `page` with its errors. */
export async function action(
  reply: FastifyReply,
  work: () => Promise<unknown>,
  onRefusal: (status: number, errors: FieldErrorList) => FastifyReply | Promise<FastifyReply>,
  redirectTo: string,
): Promise<FastifyReply> {
  try {
    await work();
  } catch (error) {
    const { status, errors } = refusal(error);
    return onRefusal(status, errors);
  }
  return reply.redirect(redirectTo, 303);
}
