// Baseline (a) of figure 1: a bare Fastify route answering a fixed JSON body.
import Fastify from "fastify";

const body = {
  id: 1,
  to: "+4915112345678",
  from: "SMSINFO",
  text: "Hello",
  status: "ACCEPTED",
  creditRemaining: 1,
};
const app = Fastify({ logger: false });
app.post("/sms", async () => body);
await app.listen({ port: Number(process.env.PORT), host: "127.0.0.1" });
console.log("READY");
