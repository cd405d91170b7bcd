/** One part of a message as a carrier submits it: the carrier port's unit of work. */
export interface MessagePart {
  /** The message the part belongs to. */
  messageId: number;
  /** The part's own id (the segment id; the message id for a single-part message). */
  partId: number;
  /** 0-based position of the part in its message. */
  partIndex: number;
  partCount: number;
  to: string;
  from: string;
  text: string;
  /** When the message's ttl runs out (server clock): SMPP's `validity_period` is the time left. */
  expiresAt: Date;
}
