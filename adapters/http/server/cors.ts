import type { IncomingHttpHeaders } from 'node:http';

/**
 * CORS, opt-in (CORS_ORIGINS): an allowed origin's responses carry Allow-Origin and the exposed headers, and its
 * preflights are answered 204 without a token; any other origin gets no CORS field (OPTIONS stays 405). Every response
 * says `Vary: Origin`. Not the `cors` package: it answers OPTIONS outside the app's one response path (no request id,
 * log line or metrics) and sends the allowed methods to origins that are not allowed.
 */
export interface CorsPolicy {
  /** Appends the CORS fields of an actual response to a flat `[name, value, ...]` header list. */
  readonly addResponseFields: (origin: string | undefined, fields: string[]) => void;
  /** The preflight fields of an answer, or undefined when it is not a preflight from an allowed origin. */
  readonly preflight: (headers: IncomingHttpHeaders, allow: string) => Record<string, string> | undefined;
}

export const CORS_ALLOWED_HEADERS = 'Authorization, Content-Type, X-Request-Id';
export const CORS_EXPOSED_HEADERS =
  'Link, X-Request-Id, Retry-After, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, Quota-Limit, Quota-Used, WWW-Authenticate';
/** Seconds a browser may cache a preflight answer (Chromium caps it at 7200). */
export const CORS_MAX_AGE_SECONDS = 600;

/** `origins`: `*`, or the exact origins allowed (`https://app.example`). */
export const corsPolicy = (origins: '*' | readonly string[]): CorsPolicy => {
  const any = origins === '*';
  const allowed = new Set(any ? [] : origins);
  const allowOrigin = (origin: string | undefined): string | undefined =>
    origin === undefined ? undefined : any ? '*' : allowed.has(origin) ? origin : undefined;
  return {
    addResponseFields: (origin, fields) => {
      // With `*` too: a cache could otherwise serve an answer without the fields (a public docs file) cross-origin.
      fields.push('Vary', 'Origin');
      const allow = allowOrigin(origin);
      if (allow === undefined) return;
      fields.push('Access-Control-Allow-Origin', allow, 'Access-Control-Expose-Headers', CORS_EXPOSED_HEADERS);
    },
    preflight: (headers, allow) => {
      if (allowOrigin(headers.origin) === undefined || headers['access-control-request-method'] === undefined)
        return undefined;
      return {
        'Access-Control-Allow-Methods': allow,
        'Access-Control-Allow-Headers': CORS_ALLOWED_HEADERS,
        'Access-Control-Max-Age': String(CORS_MAX_AGE_SECONDS),
      };
    },
  };
};
