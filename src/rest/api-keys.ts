import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { FastifyInstance } from "fastify";
import type { ApiKey } from "../../gen/sms/v1/api_keys_pb.ts";
import type { Scope } from "../accounts/scopes.ts";
import { invalidArgument } from "../errors/api-errors.ts";
import { SCOPE_VALUES } from "../services/api-key-service.ts";
import {
  createApiKeySchema,
  deleteApiKeySchema,
  listApiKeysSchema,
  rotateWebhookSecretSchema,
} from "./api-key-schemas.ts";
import { type Credentials, serviceCall } from "./call-options.ts";
import type { ServiceClients } from "./service-clients.ts";

// The account's API keys and webhook secret (docs/design.md "Accounts, API keys and the operator
// console"): POST/GET /api-keys, DELETE /api-keys/{apiKey}, POST /webhook-secret.

interface CreateBody extends Credentials {
  name: string;
  scope: Scope;
  expireTime?: string;
}

const SCOPE_NAMES = new Map(Object.entries(SCOPE_VALUES).map(([name, value]) => [value, name]));

export function renderApiKey(key: ApiKey | undefined) {
  if (!key) throw new Error("the service returned no key");
  return {
    apiKey: key.apiKey,
    name: key.name,
    scope: SCOPE_NAMES.get(key.scope) ?? "full",
    createTime: key.createTime ? timestampDate(key.createTime).toISOString() : "",
    ...(key.lastUseTime && { lastUseTime: timestampDate(key.lastUseTime).toISOString() }),
    ...(key.expireTime && { expireTime: timestampDate(key.expireTime).toISOString() }),
  };
}

/** An RFC 3339 time with its offset; anything else is a clear 400. */
function expireTimeOf(value: string | undefined) {
  if (value === undefined) return undefined;
  const rfc3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i;
  const time = Date.parse(value);
  if (!rfc3339.test(value) || Number.isNaN(time)) {
    throw invalidArgument({
      expire_time: "expireTime must be an RFC 3339 time, e.g. 2030-01-31T12:00:00Z",
    });
  }
  return timestampFromDate(new Date(time));
}

export function apiKeyRoutes(app: FastifyInstance, clients: ServiceClients): void {
  app.post<{ Body: CreateBody }>(
    "/api-keys",
    { schema: createApiKeySchema },
    async (request, reply) => {
      const { name, scope, expireTime } = request.body;
      // No Idempotency-Key: a replay would have to keep the secret (design). The call's only
      // header would be that key.
      const { headers: _idempotencyKey, ...call } = serviceCall(request, reply, request.body);
      const expire = expireTimeOf(expireTime);
      const made = await clients.apiKeys.createApiKey(
        { name, scope: SCOPE_VALUES[scope], ...(expire && { expireTime: expire }) },
        call,
      );
      reply.header("cache-control", "no-store");
      return { ...renderApiKey(made.apiKey), apiSecret: made.apiSecret };
    },
  );

  app.get<{ Querystring: Credentials }>(
    "/api-keys",
    { schema: listApiKeysSchema },
    async (request, reply) => {
      const { apiKeys } = await clients.apiKeys.listApiKeys(
        {},
        serviceCall(request, reply, request.query),
      );
      return { apiKeys: apiKeys.map(renderApiKey) };
    },
  );

  app.delete<{ Params: { key: string }; Querystring: Credentials }>(
    "/api-keys/:key",
    { schema: deleteApiKeySchema },
    async (request, reply) => {
      const { apiKey } = await clients.apiKeys.deleteApiKey(
        { apiKey: request.params.key },
        serviceCall(request, reply, request.query),
      );
      return renderApiKey(apiKey);
    },
  );

  app.post<{ Body: Credentials }>(
    "/webhook-secret",
    { schema: rotateWebhookSecretSchema },
    async (request, reply) => {
      const { webhookSecret } = await clients.apiKeys.rotateWebhookSecret(
        {},
        serviceCall(request, reply, request.body),
      );
      reply.header("cache-control", "no-store");
      return { webhookSecret };
    },
  );
}
