import type { IncomingMessage, ServerResponse } from 'node:http';
import * as E from 'fp-ts/lib/Either.js';
import { edges, expectsContinueOnly } from './exchange.js';

/** What reading a body refuses; the API's failure map (api/failures.ts) answers them. */
export type BodyRefusal =
  | { readonly _tag: 'PayloadTooLarge'; readonly limit: number }
  /** The server holds as many request-body bytes as it may (MAX_BODY_BYTES): this body is not read. */
  | { readonly _tag: 'BodiesBusy' };

const EMPTY = Buffer.alloc(0);

/**
 * Reads the body up to `limit` bytes: a declared Content-Length over it is refused before a byte is read, a chunked
 * body at its first byte over it. The bytes held also count against the server's total for all bodies being read
 * (MAX_BODY_BYTES): a declared length whole before reading starts, a chunked body as it arrives; past it, 503
 * (`BodiesBusy`) before more is read. `100 Continue` is sent only here, after authentication and these checks, and
 * never to HTTP/1.0 (RFC 9110 §10.1.1). Resolves `undefined` when the client went away mid-body.
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
  if (length !== undefined && req.readableLength === length && req.readableFlowing === null) {
    // The whole body came with its headers: one read(), its end left unread (test/edge/node-behaviour.test.ts: Node
    // serves on regardless). Stream events would cost a POST 6 to 10% of its instructions (docs/performance.md).
    const buffered: unknown = req.read();
    return Promise.resolve(E.right(buffered instanceof Buffer ? buffered : EMPTY));
  }
  const budget = edges.get(req.socket)?.bodies;
  let held = 0;
  if (budget !== undefined && length !== undefined) {
    if (!budget.take(length)) return Promise.resolve(E.left({ _tag: 'BodiesBusy' }));
    held = length;
  }
  if (req.httpVersionMinor >= 1 && expectsContinueOnly(req.headers.expect) && !res.headersSent) {
    res.writeContinue();
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
        // A chunked body: counted as it comes.
        if (!budget.take(size - held)) {
          req.pause();
          finish(E.left({ _tag: 'BodiesBusy' }));
          return;
        }
        held = size;
      }
      chunks.push(chunk);
    };
    // Answered meanwhile by the server (408, bad framing): what follows is not this request's body.
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
