import type { ConnectRouter } from "@connectrpc/connect";
import { AdminService } from "../../gen/sms/v1/admin_pb.ts";
import { MessagingService } from "../../gen/sms/v1/messaging_pb.ts";
import { SenderNameService } from "../../gen/sms/v1/sender_names_pb.ts";
import { type AdminDeps, createAdminService } from "./admin-service.ts";
import { createMessagingService, type MessagingDeps } from "./messaging-service.ts";
import { createSenderNameService } from "./sender-name-service.ts";

export type ServiceDeps = MessagingDeps & AdminDeps;

/** Registers every service; the same routes serve HTTP/1.1, HTTP/2 and the in-process client. */
export function routes(deps: ServiceDeps): (router: ConnectRouter) => void {
  return (router) => {
    router.service(MessagingService, createMessagingService(deps));
    router.service(SenderNameService, createSenderNameService(deps));
    router.service(AdminService, createAdminService(deps));
  };
}
