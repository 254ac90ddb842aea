import { ServerResponse, type IncomingMessage } from 'node:http';
import type { Logger } from '../../../application/ports/logger.js';
import { edgeOf, type UnsentBound } from './exchange.js';
import type { ServerLimits } from './server-limits.js';

/** A response the kernel has not taken all of: its own bytes, its shared Buffer, when it was written or last moved. */
interface Held {
  readonly own: number;
  readonly shared: Buffer | undefined;
  movedAt: number;
  moved: boolean;
}

/**
 * The total bound on response bytes held for clients that do not read. Each connection holds at most one response
 * (server.ts), counted from its `end` until it closes (a `sharedBody` once, however many hold it). Past
 * `maxUnsentBytes`, no response is begun (`full`, server.ts) and every response not taken further for `unsentStallMs`,
 * or of which the kernel took nothing for a tenth of that, is closed. A connection that keeps reading, however slowly,
 * is never closed for it. So the total stays within the bound plus the responses under way when it was passed; `room`
 * is called as bytes leave the count.
 */
export const unsentBound = (
  limits: Pick<ServerLimits, 'maxUnsentBytes' | 'unsentStallMs'>,
  logger: Logger,
  close: (res: ServerResponse) => void,
  room: () => void,
): UnsentBound => {
  const holding = new Map<ServerResponse, Held>();
  const unreadMs = limits.unsentStallMs / 10;
  const shares = new Map<Buffer, number>();
  let unsent = 0;
  let recheck: NodeJS.Timeout | undefined;
  const later = (ms: number): void => {
    recheck ??= setTimeout(() => {
      recheck = undefined;
      shed();
    }, ms).unref();
  };

  const release = (res: ServerResponse): void => {
    const held = holding.get(res);
    if (held === undefined) return;
    holding.delete(res);
    unsent -= held.own;
    if (held.shared !== undefined) {
      const left = (shares.get(held.shared) ?? 1) - 1;
      if (left > 0) shares.set(held.shared, left);
      else {
        shares.delete(held.shared);
        unsent -= held.shared.length;
      }
    }
    if (unsent <= limits.maxUnsentBytes) room();
  };

  const shed = (): void => {
    const now = performance.now();
    const due = (held: Held): number => held.movedAt + (held.moved ? limits.unsentStallMs : unreadMs);
    const candidates = [...holding].filter(([, held]) => due(held) <= now);
    // All of them, not only enough to come within: the rest would soon be due, and no response begins meanwhile.
    let closed = 0;
    for (const [res] of unsent > limits.maxUnsentBytes ? candidates : []) {
      release(res);
      closed += 1;
      close(res);
    }
    if (closed > 0) {
      logger.warn(
        { code: 'UNSENT_LIMIT', closed, limit: limits.maxUnsentBytes, stallMs: limits.unsentStallMs },
        'connections closed: too many response bytes unread by clients that stopped reading',
      );
    }
    if (unsent > limits.maxUnsentBytes && holding.size > 0) {
      later(Math.max(1, Math.ceil(Math.min(...[...holding.values()].map(due)) - now)));
    }
  };

  return {
    full: () => unsent > limits.maxUnsentBytes,
    held: () => unsent,
    hold: (res, own, shared) => {
      const held: Held = { own, shared, movedAt: performance.now(), moved: false };
      holding.set(res, held);
      unsent += own;
      if (shared !== undefined) {
        const holders = shares.get(shared) ?? 0;
        shares.set(shared, holders + 1);
        if (holders === 0) unsent += shared.length;
      }
      res
        .once('close', () => release(res))
        .on('drain', () => {
          held.movedAt = performance.now();
          held.moved = true;
        });
      if (unsent > limits.maxUnsentBytes) later(unreadMs);
    },
  };
};

/** The mark of a Buffer sent as is to every client that asks, kept on the Buffer itself. */
const SHARED = Symbol('sharedBody');

/** Marks a Buffer sent as is to every client that asks (a cached file): the unsent bound counts it once. */
export const sharedBody = (bytes: Buffer): Buffer => Object.defineProperty(bytes, SHARED, { value: true });
const isShared = (bytes: Buffer): boolean => SHARED in bytes;

/** A larger body goes to the socket a slice at a time, the next on 'drain' (the client reading). */
const SLICE = 64 * 1024;

/**
 * node:http's `ServerResponse` option: its `end` counts what the socket is left holding against the unsent bound, and
 * sends a large body a slice at a time, the next on 'drain', so that the count sees the client read.
 */
export class EdgeResponse<Request extends IncomingMessage = IncomingMessage> extends ServerResponse<Request> {
  override end(cb?: () => void): this;
  override end(chunk: unknown, cb?: () => void): this;
  override end(chunk: unknown, encoding: BufferEncoding, cb?: () => void): this;
  override end(chunk?: unknown, encoding?: unknown, cb?: unknown): this {
    const socket = this.socket;
    const unsent = edgeOf(this.req)?.unsent;
    let body: Buffer | undefined;
    if (chunk instanceof Buffer) body = chunk;
    else if (typeof chunk === 'string' && chunk.length > SLICE / 3 && encoding === undefined) body = Buffer.from(chunk);
    if (socket === null || unsent === undefined || body === undefined || this.req.method === 'HEAD') {
      return super.end(chunk as string, encoding as BufferEncoding, cb as () => void);
    }
    const done = (typeof encoding === 'function' ? encoding : cb) as (() => void) | undefined;
    const common = isShared(body) ? body : undefined;
    if (body.length <= SLICE) {
      super.end(body, done);
      if (!this.writableFinished && socket.writableLength > 0) {
        unsent.hold(this, common === undefined ? socket.writableLength : 0, common);
      }
      return this;
    }
    const all = body;
    let at = 0;
    unsent.hold(this, common === undefined ? all.length : 0, common);
    const pump = (): void => {
      while (at < all.length) {
        const next = all.subarray(at, at + SLICE);
        at += next.length;
        if (at >= all.length) {
          this.off('drain', pump);
          super.end(next, done);
          return;
        }
        if (!this.write(next)) return;
      }
    };
    this.on('drain', pump);
    pump();
    return this;
  }
}
