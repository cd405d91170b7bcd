/**
 * The toll-fraud guard's settings (docs/design.md "Money", "Toll-fraud guard"): `risk:` in
 * SMS_CARRIERS_FILE, with per-account overrides by the operator. SMS pumping sends bursts to
 * consecutive numbers of one range; the guard counts the distinct destinations of an account that
 * share all digits but the last `digits` within `windowSeconds`.
 */
export interface RiskSettings {
  /** `monitor`: accepted and flagged; `block`: refused. */
  mode: "monitor" | "block";
  prefixBurst: { max: number; digits: number; windowSeconds: number };
}

export const DEFAULT_RISK: RiskSettings = Object.freeze({
  mode: "monitor",
  prefixBurst: Object.freeze({ max: 20, digits: 3, windowSeconds: 600 }),
}) as RiskSettings;

/** An account's overrides, set by the operator; absent fields follow the file. */
export interface RiskOverrides {
  mode?: RiskSettings["mode"] | "off";
  max?: number;
}
