import type { IncomingMessage, ServerResponse } from 'node:http';
import * as E from 'fp-ts/lib/Either.js';
import { EdgeRequest, edgeOf, expectsContinueOnly, type BodyRead, type BodyRefusal } from './exchange.js';

export type { BodyRefusal } from './exchange.js';

const EMPTY = Buffer.alloc(0);

/**
 * What a body being read is counted for against MAX_BODY_BYTES: its bytes and an eighth more (what each chunk kept
 * costs beyond its bytes, a chunk kept being at least `KEPT` bytes), and the chunk Node has just read and the room
 * small chunks are copied into. RSS under held bodies stays within MAX_BODY_BYTES (test/edge/body-budget.test.ts).
 */
export const countedBytes = (bytes: number): number => bytes + Math.ceil(bytes / 8) + 2 * SMALL_ROOM;

/** Chunks at least this long are kept as Node made them; shorter ones are copied together into rooms this long. */
const KEPT = 4096;
const SMALL_ROOM = 64 * 1024;

/**
 * Reads the body up to `limit` bytes (a larger Content-Length refused before a byte is read), counted against the
 * server's total for bodies being read (MAX_BODY_BYTES; past it, 503 `BodiesBusy`). `100 Continue` only here, after
 * authentication, never to HTTP/1.0. Resolves `undefined` when the client went away mid-body.
 *
 * Small chunks are copied together as they arrive: Node makes a Buffer of each chunk, a few hundred bytes of memory
 * however small the chunk, so a body of 1-byte chunks kept as they came would cost a hundred times its size. Larger
 * ones are kept: copied too, each would leave as much garbage as it holds until the next collection.
 */
export const readBody = (req: IncomingMessage, res: ServerResponse, limit: number): BodyRead => {
  if (req instanceof EdgeRequest && req.early !== undefined) return req.early;
  return collect(req, res, limit, false);
};

/**
 * Starts reading the body of a request that waits behind another on its connection (turns.ts): copied as it comes,
 * counted against MAX_BODY_BYTES like any body being read, rather than left in Node's buffer as
 * one Buffer per chunk. A body past `limit` or the budget is read on and dropped, and refused in the request's turn.
 */
export const readEarly = (req: EdgeRequest, res: ServerResponse, limit: number): void => {
  const { headers } = req;
  const framed = headers['transfer-encoding'] !== undefined || (headers['content-length'] ?? '0') !== '0';
  // `Expect: 100-continue`: nothing comes before its turn sends the 100 (readBody).
  if (!framed || headers.expect !== undefined || req.complete) return;
  req.early = collect(req, res, limit, true);
};

const collect = (req: IncomingMessage, res: ServerResponse, limit: number, early: boolean): BodyRead => {
  const declared = req.headers['content-length'];
  // Neither field: no body (RFC 9112 §6.3). Node ended such a request's stream before it was served (server.ts).
  if (declared === undefined && req.headers['transfer-encoding'] === undefined) return Promise.resolve(E.right(EMPTY));
  // Gone before we asked (the client left, or the server answered and closed): no event would ever come.
  if (req.destroyed) return Promise.resolve(undefined);
  const length = declared === undefined ? undefined : Number(declared);
  /** A refusal before a byte is read; one read early drops what comes until its turn's answer. */
  const refused = (refusal: BodyRefusal) => {
    if (early) req.on('data', () => undefined);
    return Promise.resolve(E.left(refusal));
  };
  if (length !== undefined && length > limit) return refused({ _tag: 'PayloadTooLarge', limit });
  if (length !== undefined && req.readableLength === length && req.readableFlowing === null) {
    // The whole body came with its headers: one read(), its end left unread (test/edge/node-behaviour.test.ts: Node
    // serves on regardless). Stream events would cost a POST 6 to 10% of its instructions (docs/performance.md).
    const buffered: unknown = req.read();
    return Promise.resolve(E.right(buffered instanceof Buffer ? buffered : EMPTY));
  }
  const budget = edgeOf(req)?.bodies;
  let held = countedBytes(length ?? 0);
  if (budget !== undefined && !budget.take(held)) return refused({ _tag: 'BodiesBusy' });
  if (!early && req.httpVersionMinor >= 1 && expectsContinueOnly(req.headers.expect) && !res.headersSent) {
    res.writeContinue();
  }
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let small: Buffer | undefined;
    let smallSize = 0;
    const finish = (result: E.Either<BodyRefusal, Buffer> | undefined): void => {
      req.off('data', onData).off('end', onEnd).off('error', onGone).off('close', onGone);
      budget?.give(held);
      resolve(result);
    };
    const refuse = (refusal: BodyRefusal): void => {
      finish(E.left(refusal));
      // Read early: what follows is dropped until the turn's answer.
      if (early) req.on('data', () => undefined);
      else req.pause();
    };
    const keepSmall = (): void => {
      if (small !== undefined && smallSize > 0) chunks.push(small.subarray(0, smallSize));
      small = undefined;
      smallSize = 0;
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > limit) return refuse({ _tag: 'PayloadTooLarge', limit });
      // A chunked body is counted as it comes.
      if (budget !== undefined && countedBytes(size) > held) {
        if (!budget.take(countedBytes(size) - held)) return refuse({ _tag: 'BodiesBusy' });
        held = countedBytes(size);
      }
      if (chunk.length >= KEPT) {
        keepSmall();
        chunks.push(chunk);
        return;
      }
      if (small !== undefined && smallSize + chunk.length > small.length) keepSmall();
      small ??= Buffer.allocUnsafe(Math.min(SMALL_ROOM, limit));
      chunk.copy(small, smallSize);
      smallSize += chunk.length;
    };
    const whole = (): Buffer => {
      keepSmall();
      return chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size);
    };
    // Answered meanwhile by the server (408, bad framing): what follows is not this request's body.
    const onEnd = (): void => finish(res.headersSent ? undefined : E.right(whole()));
    const onGone = (): void => finish(undefined);
    req.on('data', onData).on('end', onEnd).on('error', onGone).on('close', onGone);
  });
};
