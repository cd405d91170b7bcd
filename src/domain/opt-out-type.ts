/** What an opt-out word in an inbound message asks for (the rules are in src/opt-outs/keywords.ts). */
export type OptOutType = "STOP" | "START" | "HELP";
