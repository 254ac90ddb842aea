import type { IncomingHttpHeaders } from 'node:http';

/**
 * CORS, opt-in (CORS_ORIGINS). A response to an allowed origin carries `Access-Control-Allow-Origin` and exposes the
 * headers a client of this API reads; a preflight (OPTIONS with Origin and Access-Control-Request-Method) from an
 * allowed origin is answered 204 with the path's methods and the request headers the API uses, without a token. Any
 * other origin gets no CORS field at all (and OPTIONS stays 405, as with CORS off). Every response says
 * `Vary: Origin`, since its fields depend on it (with `*`, on whether there is one).
 *
 * Written here rather than with the `cors` package: that package answers every OPTIONS itself (outside the app's one
 * response path, so without X-Request-Id, log line or metrics), sends Expose-Headers and Allow-Methods to origins that
 * are not allowed when given a list, and sets fields one setHeader at a time; what remains is a few header fields.
 */
export interface CorsPolicy {
  /** Appends the CORS fields of an actual response to a flat `[name, value, ...]` header list. */
  readonly addResponseFields: (origin: string | undefined, fields: string[]) => void;
  /**
   * The preflight fields of an answer (beside the response fields above), or undefined when the request is not a
   * preflight from an allowed origin.
   */
  readonly preflight: (headers: IncomingHttpHeaders, allow: string) => Record<string, string> | undefined;
}

export const CORS_ALLOWED_HEADERS = 'Authorization, Content-Type, X-Request-Id';
export const CORS_EXPOSED_HEADERS =
  'Link, X-Request-Id, Retry-After, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, Quota-Limit, Quota-Used, WWW-Authenticate';
/** Seconds a browser may cache a preflight answer (Chromium caps it at 7200). */
export const CORS_MAX_AGE_SECONDS = 600;

/** `origins`: `*` for any origin, or the exact origins allowed (`https://app.example`, scheme, host and port). */
export const corsPolicy = (origins: '*' | readonly string[]): CorsPolicy => {
  const any = origins === '*';
  const allowed = new Set(any ? [] : origins);
  const allowOrigin = (origin: string | undefined): string | undefined =>
    origin === undefined ? undefined : any ? '*' : allowed.has(origin) ? origin : undefined;
  return {
    addResponseFields: (origin, fields) => {
      // With `*` too: the CORS fields are sent only to requests with an Origin, so a cache that kept an answer to a
      // request without one (a docs file is `public`) would serve it to a cross-origin request, which then fails.
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
