import type { DescMethod, DescService } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";

// A service implementation with something run around each of its unary calls: the call guards
// (call-guards.ts) and the deadlines (database-deadlines.ts).

type Handler = (request: unknown, context: HandlerContext) => Promise<unknown>;

/** Runs around a handler: `next` is the handler itself. */
export type Guard = (
  method: DescMethod,
  request: unknown,
  context: HandlerContext,
  next: () => Promise<unknown>,
) => Promise<unknown>;

/** `impl` with `guard` around each of its unary methods. */
export function guarded<S extends DescService>(
  service: S,
  impl: ServiceImpl<S>,
  guard: Guard,
): ServiceImpl<S> {
  const handlers = impl as unknown as Record<string, Handler>;
  const wrapped: Record<string, Handler> = { ...handlers };
  for (const method of service.methods) {
    const handler = handlers[method.localName];
    if (method.methodKind !== "unary" || !handler) continue;
    wrapped[method.localName] = (request, context) =>
      guard(method, request, context, () => handler.call(impl, request, context));
  }
  return wrapped as unknown as ServiceImpl<S>;
}
