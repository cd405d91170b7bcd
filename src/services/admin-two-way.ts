import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import type { AdminService } from "../../gen/sms/admin/v1/admin_pb.ts";

type TwoWayMethods =
  | "assignNumber"
  | "releaseNumber"
  | "listNumbers"
  | "setInboundUrl"
  | "simulateInbound"
  | "createOptOut"
  | "deleteOptOut";

const notYet = (): never => {
  throw new ConnectError("not implemented yet", Code.Unimplemented);
};

/** AdminService's numbers, inbound URL, simulated inbound messages and opt-outs. */
export function twoWayAdmin(): Pick<ServiceImpl<typeof AdminService>, TwoWayMethods> {
  return {
    assignNumber: notYet,
    releaseNumber: notYet,
    listNumbers: notYet,
    setInboundUrl: notYet,
    simulateInbound: notYet,
    createOptOut: notYet,
    deleteOptOut: notYet,
  };
}
