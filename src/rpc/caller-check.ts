import type { HandlerContext } from "@connectrpc/connect";
import { AdminService } from "../../gen/sms/admin/v1/admin_pb.ts";
import type { RateLimits } from "../rate-limits/rate-limits.ts";
import type { AccountDirectory } from "../services/account-directory.ts";
import {
  AUTHENTICATED_ACCOUNT,
  authenticateAccount,
  authenticateOperator,
} from "../services/authentication.ts";
import { countingFailures } from "../services/call-guards.ts";

/**
 * The credentials of a Connect/gRPC call, checked from its headers alone (for the request gate):
 * the address's failed-authentication allowance first, then the operator token or the account,
 * a failure counted against the address. The account is kept in the call's context, so the
 * service's own guard (services/call-guards.ts) does not authenticate it again.
 */
export function callerCheck(deps: {
  directory: AccountDirectory;
  adminToken: string;
  limits: RateLimits | undefined;
}) {
  return async (ctx: HandlerContext): Promise<void> => {
    await countingFailures(ctx, deps.limits, async () => {
      if (ctx.service.typeName === AdminService.typeName) {
        authenticateOperator(ctx, deps.adminToken);
      } else {
        ctx.values.set(AUTHENTICATED_ACCOUNT, await authenticateAccount(ctx, deps.directory));
      }
    });
  };
}
