import type { ConnectRouter } from "@connectrpc/connect";
import { AdminService } from "../../gen/sms/admin/v1/admin_pb.ts";
import { ApiKeyService } from "../../gen/sms/v1/api_keys_pb.ts";
import { InboundService } from "../../gen/sms/v1/inbound_pb.ts";
import { MessagingService } from "../../gen/sms/v1/messaging_pb.ts";
import { AccountService, UsageService } from "../../gen/sms/v1/money_pb.ts";
import { OptOutService } from "../../gen/sms/v1/opt_outs_pb.ts";
import { SenderNameService } from "../../gen/sms/v1/sender_names_pb.ts";
import type { OptOutStore } from "../opt-outs/list.ts";
import type { OptOutRules } from "../opt-outs/rules.ts";
import type { RateLimits } from "../rate-limits/rate-limits.ts";
import { type AdminDeps, createAdminService } from "./admin-service.ts";
import { createApiKeyService } from "./api-key-service.ts";
import { accountGuard, type IdempotentCalls, type KeyUse, operatorGuard } from "./call-guards.ts";
import { type DeadlineLog, withDeadlines } from "./database-deadlines.ts";
import { guarded } from "./guarded.ts";
import { createInboundService } from "./inbound-service.ts";
import type { MessagingDeps } from "./messaging-deps.ts";
import { createMessagingService } from "./messaging-service.ts";
import { createAccountService, createUsageService } from "./money-services.ts";
import { createOptOutService } from "./opt-out-service.ts";
import { createSenderNameService } from "./sender-name-service.ts";

export type ServiceDeps = MessagingDeps &
  AdminDeps & {
    /** Request and failed-authentication limits; none when absent. */
    limits?: RateLimits;
    /** Replays of keyed SendMessage, SendBatch and CreateSenderName; none when absent. */
    idempotency?: IdempotentCalls;
    /** The opt-out lists and what they do (two-way messaging). */
    optOuts: OptOutStore;
    optOutRules: OptOutRules;
    /** Where calls answered UNAVAILABLE log their database failure. */
    log?: DeadlineLog;
    /** Records keys' last use (src/accounts/key-use.ts); none when absent. */
    keyUse?: KeyUse;
  };

/**
 * Registers every service, each call guarded (src/services/call-guards.ts); the same routes serve
 * HTTP/1.1, HTTP/2 and the in-process client.
 */
export function routes(deps: ServiceDeps): (router: ConnectRouter) => void {
  const account = accountGuard(deps.directory, deps.limits, deps.idempotency, deps.keyUse);
  const operator = operatorGuard(deps.limits);
  const timeoutMs = deps.timeouts?.requestMs ?? 5_000;
  return (router) => {
    // The deadline outermost: it covers the guards' own database reads (authentication).
    router.service(
      MessagingService,
      withDeadlines(
        MessagingService,
        guarded(MessagingService, createMessagingService(deps), account),
        timeoutMs,
        deps.log,
      ),
    );
    router.service(
      SenderNameService,
      withDeadlines(
        SenderNameService,
        guarded(SenderNameService, createSenderNameService(deps), account),
        timeoutMs,
        deps.log,
      ),
    );
    router.service(
      InboundService,
      withDeadlines(
        InboundService,
        guarded(InboundService, createInboundService(deps), account),
        timeoutMs,
        deps.log,
      ),
    );
    router.service(
      OptOutService,
      withDeadlines(
        OptOutService,
        guarded(OptOutService, createOptOutService({ ...deps, rules: deps.optOutRules }), account),
        timeoutMs,
        deps.log,
      ),
    );
    router.service(
      UsageService,
      withDeadlines(
        UsageService,
        guarded(UsageService, createUsageService(deps), account),
        timeoutMs,
        deps.log,
      ),
    );
    router.service(
      AccountService,
      withDeadlines(
        AccountService,
        guarded(AccountService, createAccountService(deps), account),
        timeoutMs,
        deps.log,
      ),
    );
    router.service(
      ApiKeyService,
      withDeadlines(
        ApiKeyService,
        guarded(ApiKeyService, createApiKeyService(deps), account),
        timeoutMs,
        deps.log,
      ),
    );
    router.service(
      AdminService,
      withDeadlines(
        AdminService,
        guarded(AdminService, createAdminService(deps), operator),
        timeoutMs,
        deps.log,
      ),
    );
  };
}
