import type { FailureResponse } from './answer.js';

/**
 * What the server refuses before any route, as its own typed values with their answers: the parser's errors, the
 * request target, Host, Authorization, Transfer-Encoding, Expect, the HTTP version, CONNECT. Each closes the
 * connection. The API's failure map (api/failures.ts) answers everything a route refuses; these never reach a route.
 */
export type ServerRefusal =
  | { readonly _tag: 'MalformedRequest'; readonly reason: string }
  | { readonly _tag: 'RequestTimeout'; readonly headersMs: number; readonly requestMs: number }
  | { readonly _tag: 'ExpectationFailed' }
  | { readonly _tag: 'HeadersTooLarge'; readonly limit: number }
  | { readonly _tag: 'MethodNotImplemented'; readonly method: string }
  | { readonly _tag: 'VersionNotSupported' };

export const CLOSE = { Connection: 'close' } as const;

export const refusalResponse = (refusal: ServerRefusal): FailureResponse => {
  switch (refusal._tag) {
    case 'MalformedRequest':
      return { status: 400, message: `request: ${refusal.reason}`, headers: CLOSE };
    case 'RequestTimeout':
      return {
        status: 408,
        message: `request: the headers must arrive within ${refusal.headersMs} ms and the whole request within ${refusal.requestMs} ms`,
        headers: CLOSE,
      };
    case 'ExpectationFailed':
      return { status: 417, message: 'expect: only "100-continue" is supported', headers: CLOSE };
    case 'HeadersTooLarge':
      return {
        status: 431,
        message: `headers: the request line and headers must be at most ${refusal.limit} bytes`,
        headers: CLOSE,
      };
    case 'MethodNotImplemented':
      return { status: 501, message: `method ${refusal.method} is not supported by this server`, headers: CLOSE };
    case 'VersionNotSupported':
      return { status: 505, message: 'request: only HTTP/1.0 and HTTP/1.1 are served', headers: CLOSE };
    default: {
      const unhandled: never = refusal;
      throw new Error(`unmapped refusal ${JSON.stringify(unhandled)}`);
    }
  }
};
