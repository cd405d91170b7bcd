import {
  type Client,
  type ConnectRouter,
  createClient,
  createRouterTransport,
} from "@connectrpc/connect";
import { MessagingService } from "../../gen/sms/v1/messaging_pb.ts";
import { SenderNameService } from "../../gen/sms/v1/sender_names_pb.ts";

/** Typed clients of the services on an in-process transport: the REST façade's only way in. */
export interface ServiceClients {
  messaging: Client<typeof MessagingService>;
  senderNames: Client<typeof SenderNameService>;
}

export function inProcessClients(routes: (router: ConnectRouter) => void): ServiceClients {
  const transport = createRouterTransport(routes);
  return {
    messaging: createClient(MessagingService, transport),
    senderNames: createClient(SenderNameService, transport),
  };
}
