/**
 * GET /sms/quote?to&text (docs/design.md "Routing, failover and prices"): what POST /sms would charge,
 * through MessagingService.QuoteMessage. Prices are numbers in account currency, as
 * creditRemaining; country and numberType are null when the number has none.
 */
import type { FastifyInstance } from "fastify";
import {
  NumberType,
  type QuoteMessageResponse,
  TextEncoding,
} from "../../gen/sms/v1/messaging_pb.ts";
import { NUMBER_TYPES } from "../domain/destination.ts";
import { MICROS } from "../store/accounts.ts";
import { serviceCall } from "./call-options.ts";
import { ALWAYS, credentials, errorResponses } from "./common-schemas.ts";
import type { ServiceClients } from "./service-clients.ts";

interface QuoteQuery {
  to: string;
  text: string;
  apiKey: string;
  apiSecret: string;
}

const nullable = (schema: object) => ({ anyOf: [schema, { type: "null" }] });

export const quoteSchema = {
  summary: "Price a message without sending it",
  description:
    "apiKey and apiSecret are query parameters, like `to` and `text`. Answers what POST /sms would charge now for this text to this recipient: its parts and their encoding, the destination's country and number type (libphonenumber's numbering plans: +44 7911 123456 is GG, Guernsey), and the price of a part and of the message, in account currency. Refused with 400 where POST /sms would refuse `to` or `text`, a destination without a price included. Write `+` in `to` as %2B; a leading space (what an unencoded + becomes) is read as +.",
  tags: ["messages"],
  querystring: {
    type: "object",
    required: ["to", "text", "apiKey", "apiSecret"],
    properties: {
      to: {
        type: "string",
        minLength: 1,
        description:
          "[+][country code][number]: an optional +, then 8 to 15 digits, the first not 0",
        examples: ["+4915112345678"],
      },
      text: { type: "string", minLength: 1, description: "UTF-8, counted as POST /sms counts it" },
      ...credentials,
    },
  },
  response: {
    200: {
      description: "The price of the message",
      type: "object",
      required: ["to", "country", "numberType", "parts", "encoding", "pricePerPart", "price"],
      properties: {
        to: { type: "string", description: "As given" },
        country: nullable({
          type: "string",
          description: "ISO 3166-1 alpha-2 code; null when the number has no country (+999...)",
        }),
        numberType: nullable({ type: "string", enum: NUMBER_TYPES }),
        parts: { type: "integer" },
        encoding: { type: "string", enum: ["latin1", "unicode"] },
        pricePerPart: { type: "number", description: "In account currency" },
        price: { type: "number", description: "parts times pricePerPart" },
      },
      examples: [
        {
          to: "+447911123456",
          country: "GG",
          numberType: "MOBILE",
          parts: 2,
          encoding: "latin1",
          pricePerPart: 0.06,
          price: 0.12,
        },
      ],
    },
    ...errorResponses("arrays", ALWAYS, {
      400: {
        to: ["to cannot be sent to: no price is set for country FR and there is no default price"],
      },
    }),
  },
} as const;

const units = (micros: bigint) => Number(micros) / MICROS;

function renderQuote(quote: QuoteMessageResponse) {
  return {
    to: quote.to,
    country: quote.country || null,
    numberType: quote.numberType === NumberType.UNSPECIFIED ? null : NumberType[quote.numberType],
    parts: quote.parts,
    encoding: quote.encoding === TextEncoding.LATIN1 ? "latin1" : "unicode",
    pricePerPart: units(quote.pricePerPartMicros),
    price: units(quote.priceMicros),
  };
}

export function quoteRoutes(app: FastifyInstance, clients: ServiceClients): void {
  app.get<{ Querystring: QuoteQuery }>(
    "/sms/quote",
    { schema: quoteSchema },
    async (request, reply) => {
      const { text } = request.query;
      // An unencoded + in a query string arrives as a space.
      const to = request.query.to.replace(/^ (?=[0-9])/, "+");
      const quote = await clients.messaging.quoteMessage(
        { to, text },
        serviceCall(request, reply, request.query),
      );
      return renderQuote(quote);
    },
  );
}
