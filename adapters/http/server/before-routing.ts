import type { IncomingMessage } from 'node:http';
import { malformed, refusal, VERSION_NOT_SUPPORTED, type FailureResponse } from './answer.js';
import type { ServerLimits } from './server-limits.js';

export type ParserError = Error & { readonly code?: string; readonly reason?: unknown };

const NOT_PRINTABLE = /[^\x20-\x7e]/g;
const TARGET = 'the request target must be a path or an absolute http(s) URI';

/** The origin-form of an absolute-form target (`http://host:port/path?query`, RFC 9112 §3.2.2), if valid. */
export const originForm = (target: string): string | undefined => {
  const sep = target.indexOf('://');
  if (sep <= 0) return undefined;
  const scheme = target.slice(0, sep).toLowerCase();
  if (scheme !== 'http' && scheme !== 'https') return undefined;
  const authority = sep + 3;
  let end = authority;
  while (end < target.length && target[end] !== '/' && target[end] !== '?') end += 1;
  if (end === authority) return undefined;
  // User info (deprecated, RFC 9110 §4.2.4) is ignored, like the host; what follows it must be a host and port.
  const host = target.slice(authority, end);
  if (!isHost(host.slice(host.lastIndexOf('@') + 1))) return undefined;
  const rest = target.slice(end);
  return rest === '' || rest[0] === '?' ? `/${rest}` : rest;
};

/**
 * What is wrong with Host (exactly one in HTTP/1.1, at most one in 1.0), Authorization and Content-Type (two are
 * refused: a proxy may have read the other) and Transfer-Encoding (chunked only), with its log code.
 */
export const badFields = (
  req: IncomingMessage,
  hostOk: (host: string) => boolean = isHost,
): { readonly reason: string; readonly code: string } | undefined => {
  const raw = req.rawHeaders;
  let hosts = 0;
  let authorizations = 0;
  let types = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    if (name.length === 4 && name.toLowerCase() === 'host') hosts += 1;
    else if (name.length === 13 && name.toLowerCase() === 'authorization') authorizations += 1;
    else if (name.length === 12 && name.toLowerCase() === 'content-type') types += 1;
  }
  if (hosts > 1 || (hosts === 0 && req.httpVersionMinor >= 1)) {
    return { reason: 'send exactly one Host header', code: 'HOST' };
  }
  if (hosts === 1 && !hostOk(req.headers.host ?? '')) {
    return { reason: 'the Host header must be a host name or address, with an optional port', code: 'HOST' };
  }
  if (authorizations > 1) return { reason: 'send at most one Authorization header', code: 'AUTHORIZATION' };
  if (types > 1) return { reason: 'send at most one Content-Type header', code: 'CONTENT_TYPE' };
  const coding = req.headers['transfer-encoding'];
  if (coding !== undefined) {
    // A 1.0 message with Transfer-Encoding has faulty framing (RFC 9112 §6.1).
    if (req.httpVersionMinor === 0) {
      return { reason: 'HTTP/1.0 has no Transfer-Encoding; send Content-Length', code: 'TRANSFER_ENCODING' };
    }
    if (coding.toLowerCase() !== 'chunked') {
      return { reason: 'no transfer coding other than chunked is supported', code: 'TRANSFER_ENCODING' };
    }
  }
  return undefined;
};

/** RFC 9110 §7.2's `Host = uri-host [ ":" port ]`, or empty (RFC 9112 §3.2); linear: one way to match each char. */
const HOST = /^(?:\[[0-9A-Za-z._~!$&'()*+,;=:-]+\]|(?:[0-9A-Za-z._~!$&'()*+,;=-]|%[0-9A-Fa-f]{2})*)(?::[0-9]*)?$/;
export const isHost = (value: string): boolean => HOST.test(value);

/** `isHost` that skips the match for the last valid value: a client sends the same Host on every request. */
export const hostMemo = (): ((value: string) => boolean) => {
  let last = '';
  return (value) => {
    if (value === last) return true;
    if (!isHost(value)) return false;
    last = value;
    return true;
  };
};

/** The answer to a parser error; undefined for socket errors, which cannot be answered. */
export const parserFailure = (err: ParserError, limits: ServerLimits): FailureResponse | undefined => {
  switch (err.code) {
    case 'HPE_HEADER_OVERFLOW':
      return refusal(431, `headers: the request line and headers must be at most ${limits.maxHeaderSize} bytes`);
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return refusal(
        408,
        `request: the headers must arrive within ${limits.headersTimeoutMs} ms and the whole request within ${limits.requestTimeoutMs} ms`,
      );
    case 'HPE_PAUSED_H2_UPGRADE': // the HTTP/2 connection preface, "PRI * HTTP/2.0"
      return VERSION_NOT_SUPPORTED;
    case 'HPE_INVALID_EOF_STATE':
      return malformed('the connection ended before the request was complete');
    default: {
      if (err.code === undefined || !err.code.startsWith('HPE_')) return undefined;
      // llhttp's reason is one of its own sentences ("Duplicate Content-Length"), never client bytes.
      const reason = typeof err.reason === 'string' ? err.reason.replace(NOT_PRINTABLE, '').slice(0, 100) : '';
      return malformed(reason === '' ? 'malformed HTTP/1.1' : `malformed HTTP/1.1 (${reason})`);
    }
  }
};

/** What dispatch refuses before the app, with its log code. */
export const refusalOf = (
  req: IncomingMessage,
  limits: ServerLimits,
  expectationFailed: boolean,
  hostOk: (host: string) => boolean,
): { readonly failure: FailureResponse; readonly code: string } | undefined => {
  if (req.httpVersionMajor !== 1) return { failure: VERSION_NOT_SUPPORTED, code: 'HTTP_VERSION' };
  // Node keeps at most maxHeadersCount (one more than the bound) fields: one more than the bound is too many.
  if (req.rawHeaders.length > 2 * limits.maxHeaderFields) {
    const failure = refusal(431, `headers: send at most ${limits.maxHeaderFields} header fields`);
    return { failure, code: 'HEADER_FIELDS' };
  }
  const bad = badFields(req, hostOk);
  if (bad) return { failure: malformed(bad.reason), code: bad.code };
  if (expectationFailed) {
    return { failure: refusal(417, 'expect: only "100-continue" is supported'), code: 'EXPECTATION' };
  }
  const url = req.url ?? '/';
  if (url[0] !== '/' && url !== '*') {
    const origin = originForm(url);
    if (origin === undefined) return { failure: malformed(TARGET), code: 'REQUEST_TARGET' };
    req.url = origin;
  }
  return undefined;
};
