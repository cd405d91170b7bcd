// The limits on a body's shape that both shape scanners keep as the bytes arrive (json-shape.ts
// for JSON, protobuf-shape.ts for the binary form): how deep it nests and how many values it
// holds. What a body costs to parse grows with these, not with its bytes (the byte limit is
// body-reading.ts's). A scanner counts in its hot loop; this keeps the limits and the first one a
// body went over, worded for the body's format.

export interface ShapeLimits {
  /** Containers (JSON) or messages (protobuf) open at once: `[[1]]` is 2 deep, a scalar body 0. */
  maxDepth: number;
  /** Values at every depth: array elements and object members, or fields. */
  maxValues: number;
}

/**
 * A 10000-message batch is 3 deep and holds about 40000 values (a message and its to, from and
 * text); the limits leave room for fields we ignore. The cost they allow is what bounds memory
 * and time per body, not the byte limit: at most this many values, however many bytes.
 */
export const BODY_SHAPE_LIMITS: ShapeLimits = { maxDepth: 32, maxValues: 100_000 };

/** How a format names a body and its values in a refusal. */
export interface ShapeWords {
  /** "body", "message". */
  body: string;
  /** "fields", or what counts as a value. */
  values: string;
}

/** A body's verdict: the first limit it went over (or why it cannot be counted), kept. */
export class ShapeVerdict {
  /** The first violation; a scanner answers it then and ever after. */
  violation: string | undefined;

  constructor(
    readonly limits: ShapeLimits,
    private readonly words: ShapeWords,
  ) {}

  /** The body went deeper than `maxDepth`: its violation. */
  tooDeep(): string {
    return this.refuse(`the ${this.words.body} nests deeper than ${this.limits.maxDepth} levels`);
  }

  /** The body holds more than `maxValues` values: its violation. */
  tooMany(): string {
    return this.refuse(
      `the ${this.words.body} holds more than ${this.limits.maxValues} ${this.words.values}`,
    );
  }

  /** Any other refusal; the first one stays. */
  refuse(reason: string): string {
    this.violation ??= reason;
    return this.violation;
  }
}
