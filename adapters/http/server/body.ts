import type { IncomingMessage, ServerResponse } from 'node:http';
import * as E from 'fp-ts/lib/Either.js';
import { bodyBudgetOf, expectsContinueOnly } from './exchange.js';

/** What reading a body refuses; the API's failure map (api/failures.ts) answers them. */
export type BodyRefusal =
  | { readonly _tag: 'PayloadTooLarge'; readonly limit: number }
  /** The server holds as many request-body bytes as it may (MAX_BODY_BYTES): this body is not read. */
  | { readonly _tag: 'BodiesBusy' };

/** `application/json`, optionally with parameters; a charset other than UTF-8 (`utf-8`, or its alias `utf8`) is refused rather than misread. */
export const isJsonContentType = (header: string | undefined): boolean => {
  if (header === undefined) return false;
  if (header === 'application/json') return true; // the usual spelling, without splitting it
  const [type = '', ...params] = header.split(';');
  if (type.trim().toLowerCase() !== 'application/json') return false;
  return params.every((param) => {
    const [name = '', value = ''] = param.split('=');
    return name.trim().toLowerCase() !== 'charset' || /^"?utf-?8"?$/i.test(value.trim());
  });
};

/**
 * No content coding, or `identity`. The body is read as it arrives: a gzip or br body would be taken for its
 * compressed bytes (a 400 about UTF-8 that misleads), and a plain body mislabelled as coded would be stored.
 */
export const isIdentityEncoding = (header: string | undefined): boolean =>
  header === undefined || header.trim().toLowerCase() === 'identity';

const EMPTY = Buffer.alloc(0);

/**
 * Reads the body up to `limit` bytes. A declared Content-Length over the limit is refused before a byte is read;
 * a chunked body is counted as it arrives and refused at the first byte over the limit, with the rest left unread
 * (the response closes the connection). The bytes held are also counted against the server's total for all the
 * bodies being read at once (the connection's body budget, MAX_BODY_BYTES): a declared length is counted whole before
 * reading starts, a chunked body chunk by chunk, and a body that would pass the total is refused with 503 (`BodiesBusy`)
 * before it is read further; what it held is given back once reading ends, however it ends. An HTTP/1.1 client that
 * sent `Expect: 100-continue` is invited to send the body (`100 Continue`) only here, after authentication and these
 * checks; an HTTP/1.0 client never is (RFC 9110 §10.1.1: it may not understand a 1xx, and takes it for the answer).
 * Resolves `undefined` when the client went away mid-body.
 */
export const readBody = (
  req: IncomingMessage,
  res: ServerResponse,
  limit: number,
): Promise<E.Either<BodyRefusal, Buffer> | undefined> => {
  // Gone before we asked (the client left, or the server answered and closed): no event would ever come.
  if (req.destroyed) return Promise.resolve(undefined);
  const declared = req.headers['content-length'];
  const length = declared === undefined ? undefined : Number(declared);
  if (length !== undefined && length > limit) {
    return Promise.resolve(E.left({ _tag: 'PayloadTooLarge', limit }));
  }
  const budget = bodyBudgetOf(req);
  let held = 0;
  if (budget !== undefined && length !== undefined) {
    if (!budget.take(length)) return Promise.resolve(E.left({ _tag: 'BodiesBusy' }));
    held = length;
  }
  if (req.httpVersionMinor >= 1 && expectsContinueOnly(req.headers.expect) && !res.headersSent) {
    res.writeContinue();
  }
  if (length !== undefined && req.readableLength === length && req.readableFlowing === null) {
    // The whole declared body is already in the request's buffer (a small body comes with its headers): taken at
    // once. Node frames the message by its Content-Length, so no byte of the next request is among these. The request
    // is left there: the end-of-body mark Node pushes next is not read, so its 'end' and 'close' are not emitted, and
    // nothing here waits for them (Node parses and serves the next request on the connection regardless; see
    // test/edge/node-internals.test.ts). Reading it through stream events instead costs a POST 6 to 10% of its
    // instructions (docs/performance.md), and resuming the stream after read() so that it ends a few per cent. The response may so be done before Node parses
    // the next request of the same read: server.ts serves a connection at most one request a turn straight from what
    // was read (`currentTurn`), so pipelined requests still wait and count. A body still arriving is read below.
    const buffered: unknown = req.read();
    if (budget !== undefined) budget.give(held);
    return Promise.resolve(E.right(buffered instanceof Buffer ? buffered : EMPTY));
  }
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const finish = (result: E.Either<BodyRefusal, Buffer> | undefined): void => {
      req.off('data', onData).off('end', onEnd).off('error', onGone).off('close', onGone);
      if (budget !== undefined) budget.give(held);
      resolve(result);
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > limit) {
        req.pause();
        finish(E.left({ _tag: 'PayloadTooLarge', limit }));
        return;
      }
      if (budget !== undefined && size > held) {
        // A chunked body (or more than declared, which the parser does not let through): counted as it comes.
        if (!budget.take(size - held)) {
          req.pause();
          finish(E.left({ _tag: 'BodiesBusy' }));
          return;
        }
        held = size;
      }
      chunks.push(chunk);
    };
    // Answered meanwhile by the server (408, bad framing): the rest, read and dropped as the connection closes, is not
    // this request's body.
    const onEnd = (): void =>
      finish(
        res.headersSent
          ? undefined
          : E.right(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size)),
      );
    const onGone = (): void => finish(undefined);
    req.on('data', onData).on('end', onEnd).on('error', onGone).on('close', onGone);
  });
};
