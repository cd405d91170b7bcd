import type { IncomingHttpHeaders } from "node:http";

// A Connect call's request headers as fetch Headers, read from node's parsed headers: the fast
// path (unary-json-calls.ts) reads three or four of them per call (content type, credentials,
// idempotency key, accepted encodings), where building a fetch Headers of all of them costs an
// append per header (issue 43). `get` and `has` read node's headers; anything else (iteration,
// a change) first builds the fetch Headers connect-es would have built, and uses it from then on.

/** A header name `get` can look up as it is: lower case, no pseudo-header, nothing to refuse. */
const PLAIN_NAME = /^[a-z0-9-]+$/;
/** Leading or trailing HTTP whitespace, which fetch Headers strip from a value. */
const EDGE_WHITESPACE = /^[\t\n\r ]|[\t\n\r ]$/;

export class NodeRequestHeaders implements Headers {
  private built: Headers | undefined;

  constructor(private readonly headers: IncomingHttpHeaders) {}

  get(name: string): string | null {
    const lower = name.toLowerCase();
    if (this.built || !PLAIN_NAME.test(lower)) return this.headers_().get(name);
    const value = this.headers[lower];
    if (value === undefined) return null;
    // Repeated headers node keeps as an array (set-cookie) fetch Headers join.
    const joined = Array.isArray(value) ? value.join(", ") : value;
    return EDGE_WHITESPACE.test(joined) ? this.headers_().get(name) : joined;
  }

  has(name: string): boolean {
    const lower = name.toLowerCase();
    if (this.built || !PLAIN_NAME.test(lower)) return this.headers_().has(name);
    return this.headers[lower] !== undefined;
  }

  append(name: string, value: string): void {
    this.headers_().append(name, value);
  }

  delete(name: string): void {
    this.headers_().delete(name);
  }

  set(name: string, value: string): void {
    this.headers_().set(name, value);
  }

  getSetCookie(): string[] {
    return this.headers_().getSetCookie();
  }

  forEach(callback: (value: string, key: string, parent: Headers) => void, thisArg?: unknown) {
    this.headers_().forEach(callback, thisArg);
  }

  entries(): HeadersIterator<[string, string]> {
    return this.headers_().entries();
  }

  keys(): HeadersIterator<string> {
    return this.headers_().keys();
  }

  values(): HeadersIterator<string> {
    return this.headers_().values();
  }

  [Symbol.iterator](): HeadersIterator<[string, string]> {
    return this.headers_()[Symbol.iterator]();
  }

  /** The fetch Headers connect-es builds of a node request, built once. */
  private headers_(): Headers {
    if (!this.built) {
      const built = new Headers();
      for (const [name, value] of Object.entries(this.headers)) {
        if (name.startsWith(":") || value === undefined) continue;
        if (Array.isArray(value)) for (const v of value) built.append(name, v);
        else built.append(name, value);
      }
      this.built = built;
    }
    return this.built;
  }
}
