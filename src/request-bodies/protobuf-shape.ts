import type { DescField, DescMessage } from "@bufbuild/protobuf";
import { type ShapeLimits, ShapeVerdict } from "./shape-limits.ts";

// The binary twin of json-shape.ts: protobuf-es decodes a message in one pass on the thread it
// runs on, and each field costs: 16 MB of empty `messages` entries took 22 s and 750 MB of heap,
// 16 MB of unknown varint fields 14 s. This scanner walks the wire format as the bytes arrive and
// counts fields, at every depth it can know (a field the message declares as a message is entered;
// unknown length-delimited fields are skipped whole, unknown groups entered), so a body past the
// limits is refused before it is decoded. Bytes that are no valid protobuf are left for
// protobuf-es to refuse: the scanner stops counting there. The limits and their refusals are
// shape-limits.ts's.

type State = "tag" | "varint" | "length" | "skip";

const byNumber = new WeakMap<DescMessage, Map<number, DescField>>();

/** A message type's fields by number, looked up once per type. */
function fieldsByNumber(desc: DescMessage): Map<number, DescField> {
  let fields = byNumber.get(desc);
  if (!fields) {
    fields = new Map(desc.fields.map((field) => [field.number, field]));
    byNumber.set(desc, fields);
  }
  return fields;
}

interface Frame {
  desc: DescMessage | undefined;
  /** Absolute offset where a length-delimited frame ends; undefined for a group. */
  end: number | undefined;
}

export class ProtobufShapeScanner {
  private readonly frames: Frame[];
  private state: State = "tag";
  private number = 0;
  private shift = 1;
  private skipLeft = 0;
  private wireField = 0;
  private position = 0;
  private values = 1;
  private stopped = false;
  private readonly verdict: ShapeVerdict;

  constructor(root: DescMessage, limits: ShapeLimits) {
    this.frames = [{ desc: root, end: undefined }];
    this.verdict = new ShapeVerdict(limits, { body: "message", values: "fields" });
  }

  /** Scans `chunk`; returns the first violation (then and ever after), or undefined. */
  feed(chunk: Uint8Array): string | undefined {
    if (this.verdict.violation || this.stopped) return this.verdict.violation;
    for (let i = 0; i < chunk.length; ) {
      if (this.state === "skip") {
        const step = Math.min(this.skipLeft, chunk.length - i);
        i += step;
        this.position += step;
        this.skipLeft -= step;
        if (this.skipLeft === 0) this.state = "tag";
        this.closeFrames();
        continue;
      }
      const byte = chunk[i] as number;
      i++;
      this.position++;
      if (this.state === "varint") {
        if (byte < 0x80) this.state = "tag";
      } else {
        // A tag or a length: a base-128 varint, least significant group first.
        this.number += (byte & 0x7f) * this.shift;
        this.shift *= 128;
        if (byte >= 0x80) {
          if (this.shift > 2 ** 35) this.stop();
          continue;
        }
        const value = this.number;
        this.number = 0;
        this.shift = 1;
        if (this.state === "tag") this.onTag(value);
        else this.onLength(value);
      }
      if (this.verdict.violation || this.stopped) return this.verdict.violation;
      this.closeFrames();
    }
    return undefined;
  }

  private onTag(tag: number): void {
    const wireType = tag % 8;
    this.wireField = Math.floor(tag / 8);
    if (wireType > 5 || this.wireField === 0) {
      this.stop();
      return;
    }
    if (++this.values > this.verdict.limits.maxValues) {
      this.verdict.tooMany();
      return;
    }
    if (wireType === 0) this.state = "varint";
    else if (wireType === 1) this.skip(8);
    else if (wireType === 5) this.skip(4);
    else if (wireType === 2) this.state = "length";
    else if (wireType === 3) this.push({ desc: undefined, end: undefined });
    else if (wireType === 4 && this.frames.length > 1 && this.top().end === undefined) {
      this.frames.pop();
    } else this.stop();
  }

  private onLength(length: number): void {
    const desc = this.top().desc;
    const field = desc && fieldsByNumber(desc).get(this.wireField);
    const message =
      field?.fieldKind === "message" ||
      (field?.fieldKind === "list" && field.listKind === "message")
        ? field.message
        : undefined;
    // An empty message has nothing to count inside.
    if (message && length > 0) {
      this.state = "tag";
      this.push({ desc: message, end: this.position + length });
      return;
    }
    // Packed scalars decode to one value per element, each at least a byte.
    if (field?.fieldKind === "list" && field.listKind === "scalar") {
      this.values += length;
      if (this.values > this.verdict.limits.maxValues) {
        this.verdict.tooMany();
        return;
      }
    }
    this.skip(length);
  }

  private push(frame: Frame): void {
    this.frames.push(frame);
    if (this.frames.length - 1 > this.verdict.limits.maxDepth) this.verdict.tooDeep();
  }

  private skip(bytes: number): void {
    this.skipLeft = bytes;
    this.state = bytes > 0 ? "skip" : "tag";
  }

  private top(): Frame {
    return this.frames[this.frames.length - 1] as Frame;
  }

  /** Leaves the length-delimited messages that end here. */
  private closeFrames(): void {
    if (this.state !== "tag") return;
    for (
      let end = this.top().end;
      end !== undefined && this.position >= end;
      end = this.top().end
    ) {
      this.frames.pop();
    }
  }

  /** Not protobuf (or not what we can follow): protobuf-es will say so. */
  private stop(): void {
    this.stopped = true;
  }
}
