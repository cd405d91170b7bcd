/**
 * Types for the parts of the npm `smpp` package (0.5.1, untyped) that the SMPP adapter uses: its
 * PDU codec (`PDU`, encode/decode of every SMPP 3.4 command and TLV), its socket framing
 * (`connect`, the `Session`'s `pdu` event and `send`) and its GSM 03.38 table (`encodings.ASCII`,
 * used to undo its decoding of data_coding 0 receipts: see receipts.ts). Everything else (request
 * timeouts, windows, rebinding, keep-alive) is ours: see bind.ts and session.ts.
 */
declare module "smpp" {
  import type { EventEmitter } from "node:events";

  /** A decoded PDU: the header fields, the command's parameters and its TLVs by name. */
  export interface SmppPdu {
    command: string;
    command_id: number;
    command_status: number;
    sequence_number: number;
    isResponse(): boolean;
    response(options?: Record<string, unknown>): SmppPdu;
    toBuffer(): Buffer;
    // the parameters and TLVs the adapter reads
    system_id?: string;
    message_id?: string;
    service_type?: string;
    source_addr_ton?: number;
    source_addr_npi?: number;
    source_addr?: string;
    dest_addr_ton?: number;
    dest_addr_npi?: number;
    destination_addr?: string;
    esm_class?: number;
    data_coding?: number | null;
    /**
     * The package decodes it by data_coding (0 and 1 through the GSM 03.38 table, 3 Latin-1, 8
     * UTF-16BE); in a deliver_sm received through codec.ts, the raw bytes (UDH included).
     */
    short_message?: { message?: string | Buffer; udh?: Buffer[] } | Buffer;
    /** As `short_message` (raw through codec.ts). */
    message_payload?: { message?: string | Buffer; udh?: Buffer[] } | Buffer;
    sar_msg_ref_num?: number;
    sar_total_segments?: number;
    sar_segment_seqnum?: number;
    receipted_message_id?: string;
    message_state?: number;
    network_error_code?: Buffer;
    [field: string]: unknown;
  }

  export interface SmppSession extends EventEmitter {
    readonly socket: import("node:net").Socket;
    /** Writes the PDU (a request keeps the sequence_number it was given); false if the socket is not writable. */
    send(pdu: SmppPdu): boolean;
    /** Ends the socket (FIN). */
    close(callback?: () => void): void;
    destroy(callback?: () => void): void;
  }

  export interface ConnectOptions {
    host: string;
    port: number;
    /** tls.connect instead of net.connect; the other options go to it as they are (ca, servername...). */
    tls?: boolean;
    [option: string]: unknown;
  }

  interface Filter {
    encode(this: SmppPdu, value: unknown): unknown;
    decode(this: SmppPdu, value: unknown, skipUdh?: boolean): unknown;
  }

  /** How a field or TLV is read and written (the package's `types`). */
  interface FieldType {
    read(buffer: Buffer, offset: number, length?: number): unknown;
    write(value: unknown, buffer: Buffer, offset: number): void;
    size(value: unknown): number;
    default: unknown;
  }

  interface Encoding {
    encode(value: string): Buffer;
    decode(value: Buffer): string;
  }

  interface SmppModule {
    connect(options: ConnectOptions): SmppSession;
    /** A new PDU of `command`, or the PDU decoded from a whole buffer. */
    PDU: {
      new (commandOrBuffer: string | Buffer, options?: Record<string, unknown>): SmppPdu;
      /** Longer PDUs throw when decoded (16384); codec.ts lifts it, framing being ours. */
      maxLength: number;
    };
    encodings: { ASCII: Encoding; LATIN1: Encoding; UCS2: Encoding };
    /** The package's tables of commands and TLVs (codec.ts replaces two decode filters). */
    commands: Record<string, { params?: Record<string, { filter?: Filter }> }>;
    tlvs: Record<string, { id: number; type: FieldType; filter?: Filter; multiple?: boolean }>;
    /** The field types; `tlv` holds those of TLVs (int8, int16, int32, cstring, string, buffer). */
    types: Record<string, FieldType> & {
      tlv: Record<"int8" | "int16" | "int32" | "cstring" | "string" | "buffer", FieldType>;
    };
  }

  const smpp: SmppModule;
  export default smpp;
}
