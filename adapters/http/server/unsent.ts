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
   * `socket.writableLength` and the handle's `writeQueueSize` when written, then at the last look: their fall is the
   * client reading.
   */
  length: number;
  queue: number;
  /** When the response was written, or a look last found the kernel had taken more: performance.now(). */
  movedAt: number;
  /** Whether the kernel has taken any of it since it was written (the client read), as of the last look. */
  moved: boolean;
  /** Whether a look has seen it (a response never moved is only believed stalled after a look and one more). */
  seen: boolean;
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
  /**
   * How long a response nothing of which the kernel has taken since it was written counts as unread: a tenth of the
   * stall window, longer than a reading client takes between two reads (its round trip), far shorter than the window.
   */
  const unreadMs = limits.unsentStallMs / 10;
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
      if (length < entry.length || (length === entry.length && queue < entry.queue)) {
        entry.movedAt = now;
        entry.moved = true;
      }
      entry.length = length;
      entry.queue = queue;
      entry.own = ownOf(length, entry.shared);
      unsent += entry.own;
    }
  };

  /**
   * Past the bound, closes the connections that are not reading, until the total is below it: first the stalled ones
   * (nothing taken for `unsentStallMs`), longest stalled first; then those whose response the kernel has taken nothing
   * of in the `unreadMs` since it was written, oldest first. A client that has read any of its response is closed only once it has
   * stalled: the bound cannot wait `unsentStallMs` for the others, or clients that never read would pile up a
   * window's worth of responses over it (about twice the bound, and growing). A stall is only
   * believed after a second look one turn of the event loop later (`confirm`): libuv writes to a socket only when the
   * loop polls, so a loop that was busy (building responses, a long GC) leaves a reading client's bytes unmoved for as
   * long, and the poll between the two looks lets it move them first.
   */
  const shed = (confirm: boolean): void => {
    const now = performance.now();
    const seenBefore = new Set<Socket>();
    for (const [socket, entry] of sending) if (entry.seen) seenBefore.add(socket);
    look(now);
    if (unsent <= limits.maxUnsentBytes) return;
    const stalled: Array<[Socket, Sending]> = [];
    const unread: Array<[Socket, Sending]> = [];
    let nextStall = Infinity;
    let anyUnmoved = false;
    for (const pair of sending) {
      const entry = pair[1];
      entry.seen = true;
      if (!entry.moved) anyUnmoved = true;
      if (now - entry.movedAt >= limits.unsentStallMs) stalled.push(pair);
      else if (!entry.moved && now - entry.movedAt >= unreadMs) {
        if (seenBefore.has(pair[0])) unread.push(pair);
        nextStall = Math.min(nextStall, entry.movedAt + limits.unsentStallMs);
      } else nextStall = Math.min(nextStall, entry.movedAt + (entry.moved ? limits.unsentStallMs : unreadMs));
    }
    if (!confirm && (stalled.length > 0 || unread.length > 0 || anyUnmoved)) {
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
    unread.sort((a, b) => a[1].movedAt - b[1].movedAt);
    let closed = 0;
    for (const [socket, entry] of [...stalled, ...unread]) {
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
    // Its clock starts now (one clock read per response): a client that never reads is judged from its response's
    // writing, not from when the total first passed the bound.
    const entry: Sending = {
      length,
      queue: queueOf(socket),
      movedAt: performance.now(),
      moved: false,
      seen: false,
      own: ownOf(length, shared),
      shared,
    };
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
