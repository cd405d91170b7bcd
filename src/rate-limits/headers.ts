// The answer to a refused call carries when to come back: Retry-After (RFC 9110) and the IETF
// RateLimit fields of draft-ietf-httpapi-ratelimit-headers-10: `RateLimit-Policy` names the policy
// with its quota `q` per window `w` seconds, `RateLimit` the same policy's remaining quota `r` and
// seconds `t` until it is restored enough to try again.

export interface RefusalHeaders {
  "retry-after": string;
  "ratelimit-policy": string;
  ratelimit: string;
}

export interface Policy {
  name: string;
  quota: number;
  windowSeconds: number;
}

export function refusalHeaders(policy: Policy, retryAfterMs: number): RefusalHeaders {
  const seconds = String(Math.max(1, Math.ceil(retryAfterMs / 1000)));
  return {
    "retry-after": seconds,
    "ratelimit-policy": `"${policy.name}";q=${policy.quota};w=${policy.windowSeconds}`,
    ratelimit: `"${policy.name}";r=0;t=${seconds}`,
  };
}
