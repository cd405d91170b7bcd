import type { DescMethod } from "@bufbuild/protobuf";
import { Code, ConnectError, createContextKey, type HandlerContext } from "@connectrpc/connect";
import { refusedWhileSuspended, scopeAllows, scopeNeeded } from "../accounts/scopes.ts";
import { permissionDenied } from "../errors/api-errors.ts";
import { CLIENT_ADDRESS } from "../rate-limits/client-address.ts";
import type { RateLimits } from "../rate-limits/rate-limits.ts";
import type { AccountDirectory } from "./account-directory.ts";
import { AUTHENTICATED_ACCOUNT, authenticateAccount, isKnownKeyRefusal } from "./authentication.ts";
import type { Guard } from "./guarded.ts";

// What every call goes through before its handler, the same for REST (in-process), Connect, gRPC
// and gRPC-Web: the failed-authentication limit of its address, authentication, the account's
// request limit, and for the operations that create something, its idempotency key.

/** A call keyed for replay: `run` answers the first outcome of `account` + key again. */
export interface IdempotentCalls {
  handles(method: DescMethod): boolean;
  run(
    accountId: string,
    method: DescMethod,
    request: unknown,
    context: HandlerContext,
    next: () => Promise<unknown>,
  ): Promise<unknown>;
}

/**
 * Set by the REST façade on the further in-process calls of one REST request (the pages of
 * GET /sms-batch/{id}): that request was counted against the account's limit once already.
 */
export const COUNTED_REQUEST = createContextKey(false, {
  description: "a further call of a request already counted",
});

/** Notes that a key was used (src/accounts/key-use.ts). */
export type KeyUse = (keyId: string) => void;

/**
 * Calls of account holders: admitted, authenticated once, counted, held to the key's scope and
 * the account's status, then keyed if they create. Scope and status come before the idempotency
 * key, so a refused call leaves no key behind (docs/design.md "Accounts, API keys and the
 * operator console").
 */
export function accountGuard(
  directory: AccountDirectory,
  limits: RateLimits | undefined,
  idempotency: IdempotentCalls | undefined,
  keyUse?: KeyUse,
): Guard {
  return async (method, request, context, next) => {
    const account = await countingFailures(context, limits, () =>
      authenticateAccount(context, directory),
    );
    context.values.set(AUTHENTICATED_ACCOUNT, account);
    if (!context.values.get(COUNTED_REQUEST)) limits?.admitAccount(account.apiKey);
    keyUse?.(account.key.id);
    if (!scopeAllows(account.key.scope, method)) {
      throw permissionDenied(
        `this API key's scope (${account.key.scope}) does not allow ${method.name}: it needs ${scopeNeeded(method)}`,
        "API_KEY_SCOPE",
      );
    }
    if (account.status && refusedWhileSuspended(method)) {
      throw permissionDenied(
        `this account is ${account.status}: ${account.statusReason ?? "no reason given"}`,
        "ACCOUNT_SUSPENDED",
      );
    }
    if (idempotency?.handles(method)) {
      return idempotency.run(account.apiKey, method, request, context, next);
    }
    return next();
  };
}

/** Calls of the operator: its token is checked by the handler, and failures count the same. */
export function operatorGuard(limits: RateLimits | undefined): Guard {
  return (_method, _request, context, next) => countingFailures(context, limits, next);
}

/**
 * Runs `call` (an authentication) for the call's client address: refused while the address is over
 * its failed-authentication allowance, and an UNAUTHENTICATED failure counted against it.
 */
export async function countingFailures<T>(
  context: HandlerContext,
  limits: RateLimits | undefined,
  call: () => Promise<T>,
): Promise<T> {
  const address = context.values.get(CLIENT_ADDRESS);
  limits?.admitAddress(address);
  try {
    return await call();
  } catch (error) {
    if (
      error instanceof ConnectError &&
      error.code === Code.Unauthenticated &&
      !isKnownKeyRefusal(error)
    ) {
      limits?.authenticationFailed(address);
    }
    throw error;
  }
}
