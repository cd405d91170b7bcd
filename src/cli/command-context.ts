import type { Client } from "@connectrpc/connect";
import type { AdminService } from "../../gen/sms/admin/v1/admin_pb.ts";

// What every command of the operator CLI gets (src/cli/admin.ts): the AdminService client, the
// call options with the operator token, and the parsed options.

/** A wrong command line: the usage is printed, exit code 2. */
export class UsageError extends Error {}

export interface CommandContext {
  client: Client<typeof AdminService>;
  options: { headers: Record<string, string> };
  values: Record<string, string | boolean | undefined>;
  /** The option's value; a UsageError when it is missing. */
  required(name: string): string;
}

/** A group of commands: the answer to print, or undefined when `noun verb` is not one of them. */
export type Commands = (noun: string, verb: string, context: CommandContext) => Promise<unknown>;
