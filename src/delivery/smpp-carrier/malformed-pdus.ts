import type { Logger } from "../../logger.ts";
import type { MalformedPdu } from "./carrier-options.ts";

/**
 * Keeps a PDU whose body does not decode for the operator (`keep`, when the service gives one).
 * Answered whatever becomes of it: the bytes are in the log when the store fails, and the SMSC must
 * stop sending it either way.
 */
export async function keepMalformedPdu(
  keep: ((pdu: MalformedPdu) => Promise<void>) | undefined,
  logger: Logger,
  pdu: MalformedPdu,
): Promise<void> {
  const hex = pdu.bytes.subarray(0, 4096).toString("hex");
  try {
    await keep?.(pdu);
    if (keep) return;
  } catch (error) {
    logger.error({ err: error, command: pdu.command, hex }, "smpp: keeping a malformed PDU failed");
    return;
  }
  logger.warn({ command: pdu.command, why: pdu.reason, hex }, "smpp: malformed PDU answered");
}
