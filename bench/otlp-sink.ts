// Figure 13's trace receiver, in a process of its own so that reading the spans never shares an
// event loop with the load generator: an OTLP/HTTP endpoint that reads each export and answers
// 200 (POST /v1/traces), and reports the bytes it read (GET /bytes).
import http from "node:http";

let bytes = 0;
const server = http.createServer((request, response) => {
  if (request.method === "GET" && request.url === "/bytes") {
    response.writeHead(200, { "content-type": "text/plain" }).end(String(bytes));
    return;
  }
  request.on("data", (chunk: Buffer) => {
    bytes += chunk.length;
  });
  // Answered in the export's own encoding: an empty ExportTraceServiceResponse either way.
  const protobuf = request.headers["content-type"] === "application/x-protobuf";
  request.on("end", () =>
    response
      .writeHead(200, { "content-type": protobuf ? "application/x-protobuf" : "application/json" })
      .end(protobuf ? "" : "{}"),
  );
});
server.listen(Number(process.env.PORT), "127.0.0.1");
