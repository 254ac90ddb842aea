import type { Socket } from 'node:net';
import type { Logger } from '../../../application/ports/logger.js';
import type { SharingResponse } from './exchange.js';

/** What the bound needs of the server's limits. */
export interface UnsentLimits {
  readonly maxUnsentBytes: number;
  readonly unsentStallMs: number;
}

/** One connection whose current response the kernel has not taken all of yet. */
interface Sending {
  /**
   * `socket.writableLength` and the handle's `writeQueueSize` at the last look (-1: none yet): their fall is the
   * client reading.
   */
  length: number;
  queue: number;
  /** When a look last found the kernel had taken more (or first looked): performance.now(). */
  movedAt: number;
  /** What this connection holds that no other shares. */
  own: number;
  /** The shared Buffer its response is, counted once over all connections (`shares`). */
  readonly shared: Buffer | undefined;
}

/** libuv's count of the bytes of the current write the kernel has not taken (net.Socket's own idle timer reads it). */
const queueOf = (socket: Socket): number =>
  (socket as Socket & { _handle?: { writeQueueSize?: number } | null })._handle?.writeQueueSize ?? 0;

/**
 * The total bound on response bytes written and not yet taken by the kernel (clients that do not read), which closes
 * only connections that are not reading, never one that makes progress.
 *
 * Each connection holds at most one response (server.ts serves one at a time); what it holds is counted when the
 * response is written, and summed anew from the sockets whenever the total passes `maxUnsentBytes` (the count only
 * overestimates: the kernel takes more as clients read). A Buffer marked shared (a cached docs asset) is counted once,
 * however many connections hold it: it costs the process nothing more per copy.
 *
 * Whether a connection reads is judged by progress, not by age: each look compares what the socket still holds (its
 * writable length and libuv's write queue, which falls as the kernel takes bytes of a write in progress) with the
 * last look. A connection whose bytes have not moved for `unsentStallMs` is stalled; past the bound, the stalled
 * connections are closed, longest stalled first, until the total is below it again. A connection that reads, however
 * slowly its link, keeps moving and is never closed for the bound; when the stalled ones do not bring the total
 * under it, the rest are looked at again once the next of them could have stalled (one timer per server, not per
 * response).
 */
export const unsentBound = (
  limits: UnsentLimits,
  logger: Logger,
  close: (socket: Socket) => void,
): { readonly written: (socket: Socket, res: SharingResponse) => void; readonly sent: (socket: Socket) => void } => {
  const sending = new Map<Socket, Sending>();
  /** Connections holding each shared Buffer. */
  const shares = new Map<Buffer, number>();
  /** Sum of `own` and of each shared Buffer held, as of the last look (plus what was written since). */
  let unsent = 0;
  let recheck: NodeJS.Timeout | undefined;
  let confirming = false;

  const release = (entry: Sending): void => {
    unsent -= entry.own;
    if (entry.shared === undefined) return;
    const left = (shares.get(entry.shared) ?? 1) - 1;
    if (left > 0) shares.set(entry.shared, left);
    else {
      shares.delete(entry.shared);
      unsent -= entry.shared.length;
    }
  };

  const ownOf = (length: number, shared: Buffer | undefined): number =>
    shared === undefined ? length : Math.max(0, length - shared.length);

  /** Looks at every connection: what it holds now, and whether the kernel took more of it since the last look. */
  const look = (now: number): void => {
    unsent = 0;
    for (const bytes of shares.keys()) unsent += bytes.length;
    for (const [socket, entry] of sending) {
      const length = socket.writableLength;
      const queue = queueOf(socket);
      // The first look at a response starts its clock (a look per response, and none per request).
      if (entry.queue < 0 || length < entry.length || (length === entry.length && queue < entry.queue)) {
        entry.movedAt = now;
      }
      entry.length = length;
      entry.queue = queue;
      entry.own = ownOf(length, entry.shared);
      unsent += entry.own;
    }
  };

  /**
   * Past the bound, closes the stalled connections, longest stalled first, until the total is below it. A stall is
   * only believed after a second look one turn of the event loop later (`confirm`): libuv writes to a socket only when
   * the loop polls, so a loop that was busy (building responses, a long GC) leaves a reading client's bytes unmoved
   * for as long, and the poll between the two looks lets it move them first.
   */
  const shed = (confirm: boolean): void => {
    const now = performance.now();
    look(now);
    if (unsent <= limits.maxUnsentBytes) return;
    const stalled: Array<[Socket, Sending]> = [];
    let nextStall = Infinity;
    for (const pair of sending) {
      const movedAt = pair[1].movedAt;
      if (now - movedAt >= limits.unsentStallMs) stalled.push(pair);
      else nextStall = Math.min(nextStall, movedAt + limits.unsentStallMs);
    }
    if (!confirm && stalled.length > 0) {
      if (!confirming) {
        confirming = true;
        setImmediate(() => {
          confirming = false;
          shed(true);
        });
      }
      return;
    }
    stalled.sort((a, b) => a[1].movedAt - b[1].movedAt);
    let closed = 0;
    for (const [socket, entry] of stalled) {
      if (unsent <= limits.maxUnsentBytes) break;
      release(entry);
      sending.delete(socket);
      closed += 1;
      close(socket);
    }
    if (closed > 0) {
      logger.warn(
        { code: 'UNSENT_LIMIT', closed, limit: limits.maxUnsentBytes, stallMs: limits.unsentStallMs },
        'connections closed: too many response bytes unread by clients that stopped reading',
      );
    }
    if (unsent > limits.maxUnsentBytes && recheck === undefined && nextStall !== Infinity) {
      recheck = setTimeout(
        () => {
          recheck = undefined;
          shed(false);
        },
        Math.max(1, Math.ceil(nextStall - now)),
      ).unref();
    }
  };

  /** A response's last bytes were handed to the socket (its 'prefinish'): counted in. */
  const written = (socket: Socket, res: SharingResponse): void => {
    const length = socket.writableLength;
    const shared = res.sharedBody;
    // Not looked at yet (`queue` -1): the first look, which comes as soon as the total is over the bound, starts its
    // clock, so that no clock or handle is read per response.
    const entry: Sending = { length, queue: -1, movedAt: 0, own: ownOf(length, shared), shared };
    sending.set(socket, entry);
    unsent += entry.own;
    if (shared !== undefined) {
      const holders = shares.get(shared) ?? 0;
      shares.set(shared, holders + 1);
      if (holders === 0) unsent += shared.length;
    }
    if (unsent > limits.maxUnsentBytes && !confirming) shed(false);
  };

  const sent = (socket: Socket): void => {
    const entry = sending.get(socket);
    if (entry === undefined) return;
    release(entry);
    sending.delete(socket);
  };

  return { written, sent };
};
