import type { DescMethod } from "@bufbuild/protobuf";
import { Code, ConnectError, type ConnectRouter } from "@connectrpc/connect";
import { MessagingService } from "../../gen/sms/v1/messaging_pb.ts";
import { RPC_READ_MAX_BYTES } from "../domain/limits.ts";

// Connect/gRPC read limits per method: a request message larger than its method's limit, before
// or after decompression, is refused with RESOURCE_EXHAUSTED by the library, which stops reading
// there (at once when Content-Length announces more). SendBatch takes what the REST batch
// endpoint takes; every other method, whose largest valid request is a few kilobytes, 1 MiB.

type Impl = (...args: never[]) => unknown;

const SEND_BATCH_PATH = `/${MessagingService.typeName}/${MessagingService.method.sendBatch.name}`;

/** The read limit of the method at `path` (a request's URL, query and all). */
export function readMaxBytesOf(path: string, batchReadMaxBytes: number): number {
  return path.split("?")[0] === SEND_BATCH_PATH ? batchReadMaxBytes : RPC_READ_MAX_BYTES;
}

/** `routes` as given, each method registered on its own with its read limit. */
export function withReadLimits(
  routes: (router: ConnectRouter) => void,
  batchReadMaxBytes: number,
): (router: ConnectRouter) => void {
  const limitOf = (method: DescMethod) =>
    method === MessagingService.method.sendBatch ? batchReadMaxBytes : RPC_READ_MAX_BYTES;
  return (router) => {
    const limited: ConnectRouter = {
      handlers: router.handlers,
      service(service, implementation, options) {
        for (const method of service.methods) {
          const fn = (implementation as Record<string, Impl | undefined>)[method.localName];
          const impl = fn ? fn.bind(implementation) : unimplemented(method);
          router.rpc(method, impl as never, { ...options, readMaxBytes: limitOf(method) });
        }
        return limited;
      },
      rpc(method, impl, options) {
        router.rpc(method, impl, { readMaxBytes: limitOf(method), ...options });
        return limited;
      },
    };
    routes(limited);
  };
}

function unimplemented(method: DescMethod) {
  return () => {
    throw new ConnectError(
      `${method.parent.typeName}.${method.name} is not implemented`,
      Code.Unimplemented,
    );
  };
}
