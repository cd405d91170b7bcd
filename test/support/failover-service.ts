/** The failover tests' service: two SMPP carriers, alpha and beta, on the given routes. */
import { carriersFile } from "./carriers-file.ts";
import { type RunningService, startService } from "./service.ts";

/**
 * A service with two SMPP carriers, alpha and beta (one bind, window 4, 100 TPS each), on these
 * route lines, failing over after 1 s unbound or 6 answers of which half refused (open 600 s),
 * workers and metrics on; and an account with 100 credit.
 */
export async function startFailoverService(
  smscs: { alpha: { url: string }; beta: { url: string } },
  routes: readonly string[],
): Promise<{ service: RunningService; account: { apiKey: string; apiSecret: string } }> {
  const file = carriersFile([
    "carriers:",
    `  - { name: alpha, url: "${smscs.alpha.url}", binds: 1, window: 4, tps: 100 }`,
    `  - { name: beta, url: "${smscs.beta.url}", binds: 1, window: 4, tps: 100 }`,
    "routes:",
    ...routes.map((route) => `  - ${route}`),
    "prices:",
    "  default: 0.05",
    "failover: { afterSeconds: 1, circuitWindow: 6, circuitOpenSeconds: 600 }",
  ]);
  const service = await startService(
    { SMS_RUN_WORKERS: "true", SMS_CARRIERS_FILE: file },
    undefined,
    { metrics: true },
  );
  return { service, account: await service.createAccount({ credit: 100 }) };
}
