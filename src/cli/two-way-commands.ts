import { toJson } from "@bufbuild/protobuf";
import { AssignedNumberSchema } from "../../gen/sms/admin/v1/admin_pb.ts";
import { InboundMessageSchema, OptOutSchema } from "../../gen/sms/v1/types_pb.ts";
import { accountJson } from "./account-commands.ts";
import type { Commands } from "./command-context.ts";

export const TWO_WAY_USAGE = `  account inbound-url --api-key K --url U       (empty U clears it)
  number assign --api-key K --number N
  number release --number N
  number list [--api-key K]
  opt-out add|remove --api-key K --number N     (the operator's own entries)
  simulate inbound --from F --to T --text X     (SMS_CARRIER=simulator only)`;

const json = <T>(schema: Parameters<typeof toJson>[0], message: T | undefined) =>
  message ? toJson(schema, message as never, { alwaysEmitImplicit: true }) : null;

/** Numbers, the inbound URL, the operator's opt-outs and simulated inbound messages. */
export const twoWayCommands: Commands = async (
  noun,
  verb,
  { client, options, values, required },
) => {
  if (noun === "account" && verb === "inbound-url") {
    const { account } = await client.setInboundUrl(
      { apiKey: required("api-key"), inboundUrl: (values.url as string | undefined) ?? "" },
      options,
    );
    return accountJson(account);
  }
  if (noun === "number") {
    switch (verb) {
      case "assign": {
        const target = { apiKey: required("api-key"), number: required("number") };
        return json(AssignedNumberSchema, (await client.assignNumber(target, options)).number);
      }
      case "release": {
        const released = await client.releaseNumber({ number: required("number") }, options);
        return json(AssignedNumberSchema, released.number);
      }
      case "list": {
        // Every page: an operator's list of numbers is short.
        const numbers: unknown[] = [];
        let pageToken = "";
        do {
          const page = await client.listNumbers(
            { apiKey: (values["api-key"] as string | undefined) ?? "", pageSize: 1000, pageToken },
            options,
          );
          numbers.push(...page.numbers.map((n) => json(AssignedNumberSchema, n)));
          pageToken = page.nextPageToken;
        } while (pageToken !== "");
        return { numbers };
      }
    }
  }
  if (noun === "opt-out" && (verb === "add" || verb === "remove")) {
    const target = { apiKey: required("api-key"), number: required("number") };
    const answer =
      verb === "add"
        ? await client.createOptOut(target, options)
        : await client.deleteOptOut(target, options);
    return json(OptOutSchema, answer.optOut);
  }
  if (noun === "simulate" && verb === "inbound") {
    const { inboundMessage } = await client.simulateInbound(
      { sender: required("from"), to: required("to"), text: required("text") },
      options,
    );
    return json(InboundMessageSchema, inboundMessage);
  }
  return undefined;
};
