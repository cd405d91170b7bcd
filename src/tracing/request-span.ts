import {
  type Attributes,
  type AttributeValue,
  type Exception,
  type HrTime,
  type Link,
  type Span,
  SpanKind,
  type SpanStatus,
  SpanStatusCode,
  type TimeInput,
} from "@opentelemetry/api";
import type { ReadableSpan, SpanProcessor, TimedEvent } from "@opentelemetry/sdk-trace-node";
import type { RootIds } from "./root-sampling.ts";

// The span of a request whose trace the service took as a root (root-sampling.ts `sampleRoot`),
// made here rather than by the SDK's tracer and handed, once ended, to the provider's span
// processor like any SDK span, so it is batched and exported the same way. The SDK's span of
// such a request cost it about 24 µs, most of it the tracer's bookkeeping (its own span metrics,
// attribute checks twice, a sampler, hex id checks); this one keeps what the export reads. Spans
// that continue a caller's trace, and the later work of a message, stay the SDK's.

/** Where a request span goes once ended: the provider's processor, with its resource and scope. */
export interface RequestSpanSink {
  processor: SpanProcessor;
  resource: ReadableSpan["resource"];
  scope: ReadableSpan["instrumentationScope"];
}

/** The SDK's limit of attributes per span (OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT's default). */
const ATTRIBUTE_LIMIT = 128;

export class RequestSpan implements Span, ReadableSpan {
  readonly kind = SpanKind.SERVER;
  readonly parentSpanContext = undefined;
  readonly attributes: Attributes = {};
  readonly links: Link[] = [];
  readonly events: TimedEvent[] = [];
  readonly startTime: HrTime;
  endTime: HrTime = [0, 0];
  duration: HrTime = [-1, -1];
  status: SpanStatus = { code: SpanStatusCode.UNSET };
  ended = false;
  droppedAttributesCount = 0;
  droppedEventsCount = 0;
  droppedLinksCount = 0;
  readonly resource: ReadableSpan["resource"];
  readonly instrumentationScope: ReadableSpan["instrumentationScope"];
  /** Epoch milliseconds at the start, and the monotonic clock then: durations use the latter. */
  private readonly startMs: number;
  private readonly startedAt: number;

  constructor(
    public name: string,
    private readonly ids: RootIds,
    attributes: Attributes,
    private readonly sink: RequestSpanSink,
  ) {
    this.startMs = Date.now();
    this.startedAt = performance.now();
    this.startTime = hrTime(this.startMs);
    this.resource = sink.resource;
    this.instrumentationScope = sink.scope;
    this.setAttributes(attributes);
  }

  spanContext(): RootIds {
    return this.ids;
  }

  setAttribute(key: string, value?: AttributeValue): this {
    if (this.ended || value === undefined || value === null || key.length === 0) return this;
    if (!(key in this.attributes) && Object.keys(this.attributes).length >= ATTRIBUTE_LIMIT) {
      this.droppedAttributesCount++;
      return this;
    }
    this.attributes[key] = value;
    return this;
  }

  setAttributes(attributes: Attributes): this {
    for (const key in attributes) this.setAttribute(key, attributes[key]);
    return this;
  }

  addEvent(name: string, attributesOrTime?: Attributes | TimeInput, time?: TimeInput): this {
    if (this.ended) return this;
    const timed = isTimeInput(attributesOrTime);
    this.events.push({
      name,
      attributes: timed ? {} : (attributesOrTime ?? {}),
      time: this.timeOf(timed ? attributesOrTime : time),
      droppedAttributesCount: 0,
    });
    return this;
  }

  addLink(link: Link): this {
    if (!this.ended) this.links.push(link);
    return this;
  }

  addLinks(links: Link[]): this {
    for (const link of links) this.addLink(link);
    return this;
  }

  setStatus(status: SpanStatus): this {
    if (this.ended || this.status.code === SpanStatusCode.OK) return this;
    if (status.code === SpanStatusCode.UNSET) return this;
    this.status = status.code === SpanStatusCode.ERROR ? status : { code: status.code };
    return this;
  }

  updateName(name: string): this {
    if (!this.ended) this.name = name;
    return this;
  }

  end(endTime?: TimeInput): void {
    if (this.ended) return;
    this.ended = true;
    const endMs = endTime === undefined ? this.nowMs() : millisOf(endTime);
    this.endTime = hrTime(endMs);
    this.duration = hrTime(Math.max(0, endMs - this.startMs));
    this.sink.processor.onEnd(this);
  }

  isRecording(): boolean {
    return !this.ended;
  }

  recordException(exception: Exception, time?: TimeInput): void {
    const attributes: Attributes =
      typeof exception === "string"
        ? { "exception.message": exception }
        : {
            ...(exception.name && { "exception.type": exception.name }),
            ...(exception.message && { "exception.message": exception.message }),
            ...(exception.stack && { "exception.stacktrace": exception.stack }),
          };
    this.addEvent("exception", attributes, time);
  }

  /** Now, on the span's clock: its start plus the monotonic time since. */
  private nowMs(): number {
    return this.startMs + (performance.now() - this.startedAt);
  }

  private timeOf(time: TimeInput | undefined): HrTime {
    return time === undefined ? hrTime(this.nowMs()) : hrTime(millisOf(time));
  }
}

function isTimeInput(value: Attributes | TimeInput | undefined): value is TimeInput {
  return typeof value === "number" || value instanceof Date || Array.isArray(value);
}

/** Epoch milliseconds of a TimeInput (epoch ms, a Date, or an HrTime). */
function millisOf(time: TimeInput): number {
  if (typeof time === "number") return time;
  if (time instanceof Date) return time.getTime();
  return time[0] * 1000 + time[1] / 1e6;
}

/** Epoch milliseconds as [seconds, nanoseconds]. */
function hrTime(ms: number): HrTime {
  const seconds = Math.floor(ms / 1000);
  const nanos = Math.min(999_999_999, Math.round((ms - seconds * 1000) * 1e6));
  return [seconds, nanos];
}
