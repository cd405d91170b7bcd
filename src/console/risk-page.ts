import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { FastifyInstance } from "fastify";
import { type Console, type FieldErrorList, field, refusal } from "./console-kit.ts";

// What the toll-fraud guard flagged (mode monitor: accepted) or refused (mode block) in the last
// 30 days, newest first, through AdminService.ListRiskEvents like every other door.

/** As many as ListRiskEvents gives at most; it has no pages. */
const SHOWN = 1000;

const iso = (date: Date) => date.toISOString().replace(/\.\d{3}Z$/, "Z");
/** The guard's mode an event was taken under: monitor flags, block refuses. */
const MODE: Record<string, string> = { flagged: "monitor", refused: "block" };

export function riskPage(app: FastifyInstance, console: Console): void {
  const { admin } = console.deps;
  app.get(
    "/risk",
    console.signedIn(async (request, reply, operator) => {
      const account = field(request.query, "account");
      const data = { title: "Toll-fraud guard", nav: "risk", account, rows: [] as unknown[] };
      let errors: FieldErrorList = {};
      let status = 200;
      try {
        const { events } = await admin.listRiskEvents(
          { apiKey: account, pageSize: SHOWN },
          operator.call,
        );
        data.rows = events.map((e) => ({
          at: e.time ? iso(timestampDate(e.time)) : "",
          account: e.apiKey,
          range: e.range,
          to: e.to,
          mode: MODE[e.action] ?? "",
          action: e.action,
          message: e.messageId === undefined ? "" : String(e.messageId),
        }));
      } catch (error) {
        ({ status, errors } = refusal(error));
      }
      return console.render(reply.code(status), "risk", { ...data, errors }, operator);
    }),
  );
}
