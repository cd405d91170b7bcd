/**
 * OTLP over HTTP with JSON, for a collector that asks for it (OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=
 * http/json): every field of a span as in protobuf (span-export.test.ts), in the other encoding.
 */
import { it } from "vitest";
import { expectSpanExported, useTracingReceiver } from "../support/otlp-receiver.ts";

const tracing = useTracingReceiver({ OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "http/json" });

it("spans leave as OTLP JSON when the protocol variable says http/json", async () => {
  await expectSpanExported(tracing.otlp, "application/json");
});
