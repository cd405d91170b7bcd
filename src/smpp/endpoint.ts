/**
 * `SMS_SMPP_URL`: `smpp://SYSTEM_ID:PASSWORD@HOST:PORT`, or `smpps://` for TLS. The system id and
 * password may be percent-encoded. The port defaults to 2775 (smpp) and 3550 (smpps), the ports
 * SMSCs commonly listen on. Nothing here ever puts the password into a message.
 */

export interface SmppEndpoint {
  host: string;
  port: number;
  tls: boolean;
  systemId: string;
  password: string;
}

/** The endpoint of an SMPP URL; throws an Error whose message never contains the password. */
export function parseSmppUrl(value: string): SmppEndpoint {
  const expected = "expected smpp://SYSTEM_ID:PASSWORD@HOST:PORT or smpps://…";
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(value)?.[1]?.toLowerCase();
  if (scheme !== "smpp" && scheme !== "smpps") {
    throw new Error(`${expected}, got scheme "${scheme ?? "(none)"}"`);
  }
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new Error(`${expected}; the value does not parse as a URL`);
  }
  const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
  if (!host) throw new Error(`${expected}; the host is missing`);
  let systemId: string;
  let password: string;
  try {
    systemId = decodeURIComponent(url.username);
    password = decodeURIComponent(url.password);
  } catch {
    throw new Error(`${expected}; bad percent-encoding in the system id or password`);
  }
  if (!systemId) throw new Error(`${expected}; the system id is missing`);
  if (systemId.length > 15)
    throw new Error("the system id is longer than 15 characters (SMPP 3.4)");
  const tls = scheme === "smpps";
  const port = url.port === "" ? (tls ? 3550 : 2775) : Number(url.port);
  if ((url.pathname !== "" && url.pathname !== "/") || url.search !== "") {
    throw new Error(`${expected}; no path or query is allowed`);
  }
  return { host, port, tls, systemId, password };
}

/** The endpoint as logs and /health may show it: without the password. */
export function describeEndpoint(endpoint: SmppEndpoint): string {
  const host = endpoint.host.includes(":") ? `[${endpoint.host}]` : endpoint.host;
  return `${endpoint.tls ? "smpps" : "smpp"}://${encodeURIComponent(endpoint.systemId)}@${host}:${endpoint.port}`;
}
