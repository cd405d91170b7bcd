import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";

// connect-es answers INTERNAL when a binary protobuf request cannot be decoded (truncated,
// garbage, wrong wire types, nesting past the recursion limit), where JSON that cannot be decoded
// is INVALID_ARGUMENT. It is the client's input, so it is INVALID_ARGUMENT here too. The library
// ends every call through the context's abort(error) before it writes the error out (Connect,
// gRPC and gRPC-Web alike), so the error's code is corrected there.

const BINARY_PARSE_FAILURE = "parse binary: ";

/** Call from the request gate, before anything of the request is read. */
export function reportParseFailuresAsInvalid(ctx: HandlerContext): void {
  ctx.signal.addEventListener(
    "abort",
    () => {
      const reason: unknown = ctx.signal.reason;
      if (
        reason instanceof ConnectError &&
        reason.code === Code.Internal &&
        reason.rawMessage.startsWith(BINARY_PARSE_FAILURE)
      ) {
        (reason as { code: Code }).code = Code.InvalidArgument;
      }
    },
    { once: true },
  );
}
