/** SMPP 3.4 command_status values the adapter acts on, and the names logs and SEND_ERROR reasons use. */

export const ESME_ROK = 0x00;
export const ESME_RINVCMDID = 0x03;
/** The SMSC's own failure: it says nothing of the message, which another carrier may take. */
export const ESME_RSYSERR = 0x08;
export const ESME_RMSGQFUL = 0x14;
export const ESME_RTHROTTLED = 0x58;
/** deliver_sm_resp of an MO: temporary, the SMSC delivers it again later. */
export const ESME_RX_T_APPN = 0x64;
/** deliver_sm_resp / data_sm_resp of a PDU whose body does not decode: the SMSC stops redelivering it. */
export const ESME_RX_P_APPN = 0x65;
/** deliver_sm_resp of an MO: refused for good (no account owns its destination). */
export const ESME_RX_R_APPN = 0x66;

const STATUS_NAMES = new Map<number, string>([
  [0x01, "ESME_RINVMSGLEN"],
  [0x02, "ESME_RINVCMDLEN"],
  [0x03, "ESME_RINVCMDID"],
  [0x04, "ESME_RINVBNDSTS"],
  [0x08, "ESME_RSYSERR"],
  [0x0a, "ESME_RINVSRCADR"],
  [0x0b, "ESME_RINVDSTADR"],
  [0x14, "ESME_RMSGQFUL"],
  [0x33, "ESME_RINVNUMDESTS"],
  [0x45, "ESME_RSUBMITFAIL"],
  [0x48, "ESME_RINVSRCTON"],
  [0x49, "ESME_RINVSRCNPI"],
  [0x50, "ESME_RINVDSTTON"],
  [0x51, "ESME_RINVDSTNPI"],
  [0x58, "ESME_RTHROTTLED"],
  [0x61, "ESME_RINVSCHED"],
  [0x62, "ESME_RINVEXPIRY"],
  [0x64, "ESME_RX_T_APPN"],
  [0x65, "ESME_RX_P_APPN"],
  [0x66, "ESME_RX_R_APPN"],
]);

/**
 * Refusals that blame the SMSC, not the part (SubmitResult.carrierFault): with several carriers the
 * message goes to the next of its route. Every other refusal (a bad address, ESME_RSUBMITFAIL, ...)
 * would be refused elsewhere too and ends the message (SEND_ERROR).
 */
export function isCarrierFault(status: number): boolean {
  return status === ESME_RSYSERR;
}

/** e.g. `ESME_RSUBMITFAIL (0x45)`, or `status 0x4a` for one without a name here. */
export function statusName(status: number): string {
  const hex = `0x${status.toString(16).padStart(2, "0")}`;
  const name = STATUS_NAMES.get(status);
  return name ? `${name} (${hex})` : `status ${hex}`;
}
