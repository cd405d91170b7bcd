import { create, type DescMessage, type DescMethod, type DescService } from "@bufbuild/protobuf";
import {
  type Client,
  Code,
  ConnectError,
  type ConnectRouter,
  type ContextValues,
  createClient,
  createContextValues,
  type HandlerContext,
  type Transport,
} from "@connectrpc/connect";
import { createDeadlineSignal, createLinkedAbortController } from "@connectrpc/connect/protocol";
import { ApiKeyService } from "../../gen/sms/v1/api_keys_pb.ts";
import { InboundService } from "../../gen/sms/v1/inbound_pb.ts";
import { MessagingService } from "../../gen/sms/v1/messaging_pb.ts";
import { AccountService, UsageService } from "../../gen/sms/v1/money_pb.ts";
import { OptOutService } from "../../gen/sms/v1/opt_outs_pb.ts";
import { SenderNameService } from "../../gen/sms/v1/sender_names_pb.ts";

/** Typed clients of the services on an in-process transport: the REST façade's only way in. */
export interface ServiceClients {
  messaging: Client<typeof MessagingService>;
  senderNames: Client<typeof SenderNameService>;
  inbound: Client<typeof InboundService>;
  optOuts: Client<typeof OptOutService>;
  usage: Client<typeof UsageService>;
  account: Client<typeof AccountService>;
  apiKeys: Client<typeof ApiKeyService>;
}

type UnaryHandler = (request: unknown, context: HandlerContext) => unknown;

/**
 * The HandlerContext of an in-process call: what connect-es's createHandlerContext makes, but its
 * signal made only when read. That one costs two AbortControllers, two abort listeners and two
 * copies of the context per call, and the services read no call's signal on their usual path
 * (their deadlines are their own: services/database-deadlines.ts).
 */
function inProcessContext(
  method: DescMethod,
  requestSignal: AbortSignal | undefined,
  timeoutMs: number | undefined,
  header: HeadersInit | undefined,
  contextValues: ContextValues | undefined,
): HandlerContext {
  const deadlineAt = timeoutMs === undefined ? undefined : Date.now() + timeoutMs;
  let signal: AbortSignal | undefined;
  return {
    service: method.parent,
    method,
    protocolName: "in-process",
    requestMethod: "POST",
    url: `/${method.parent.typeName}/${method.name}`,
    get signal() {
      if (!signal) {
        // As createHandlerContext's: aborted by the caller's signal or at the call's deadline.
        const deadline = createDeadlineSignal(
          deadlineAt === undefined ? undefined : Math.max(0, deadlineAt - Date.now()),
        );
        signal = createLinkedAbortController(deadline.signal, requestSignal).signal;
      }
      return signal;
    },
    timeoutMs: () => (deadlineAt === undefined ? undefined : deadlineAt - Date.now()),
    requestHeader: new Headers(header),
    responseHeader: new Headers(),
    responseTrailer: new Headers(),
    values: contextValues ?? createContextValues(),
  };
}

/**
 * A transport that hands the client's message straight to the service implementation, with a
 * real HandlerContext (headers, signal, timeout), and its answer straight back. Same types, same
 * errors as over the network, without encoding both ways: this is the hot path of every REST call.
 */
export function inProcessTransport(routes: (router: ConnectRouter) => void): Transport {
  const handlers = new Map<DescMethod, UnaryHandler>();
  const collector = {
    service(service: DescService, impl: Record<string, UnaryHandler>) {
      for (const method of service.methods) {
        const handler = impl[method.localName];
        if (method.methodKind === "unary" && handler) handlers.set(method, handler.bind(impl));
      }
      return collector;
    },
    rpc() {
      throw new Error("in-process transport: register services with router.service()");
    },
    handlers: [],
  };
  routes(collector as unknown as ConnectRouter);

  return {
    async unary(method, signal, timeoutMs, header, input, contextValues) {
      const handler = handlers.get(method);
      if (!handler) throw new ConnectError(`${method.name} is not served`, Code.Unimplemented);
      const context = inProcessContext(method, signal, timeoutMs, header, contextValues);
      const output = await handler(create(method.input, input as never), context);
      return {
        stream: false,
        service: method.parent,
        method,
        header: context.responseHeader,
        trailer: context.responseTrailer,
        message: create(method.output as DescMessage, output as never),
      } as never;
    },
    stream() {
      throw new ConnectError("in-process transport: streaming is not served", Code.Unimplemented);
    },
  };
}

export function inProcessClients(routes: (router: ConnectRouter) => void): ServiceClients {
  const transport = inProcessTransport(routes);
  return {
    messaging: createClient(MessagingService, transport),
    senderNames: createClient(SenderNameService, transport),
    inbound: createClient(InboundService, transport),
    optOuts: createClient(OptOutService, transport),
    usage: createClient(UsageService, transport),
    account: createClient(AccountService, transport),
    apiKeys: createClient(ApiKeyService, transport),
  };
}
