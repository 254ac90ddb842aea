import type { ServerResponse } from 'node:http';
import type { Logger } from '../../../application/ports/logger.js';

/** What the bound needs of the server's limits. */
export interface UnsentLimits {
  readonly maxUnsentBytes: number;
  readonly unsentStallMs: number;
}

/** A response whose bytes the kernel has not taken all of yet. */
interface Held {
  /** Bytes this response holds that no other shares. */
  readonly own: number;
  /** The shared Buffer it is, counted once over all responses (`shares`). */
  readonly shared: Buffer | undefined;
  /** When it was written, or last seen taken further by the kernel ('drain'): performance.now(). */
  movedAt: number;
  moved: boolean;
}

export interface UnsentBound {
  /** Counts a response in until it closes; `moved` tells of the client reading (its 'drain'). */
  readonly hold: (res: ServerResponse, own: number, shared: Buffer | undefined) => { readonly moved: () => void };
}

/**
 * The total bound on response bytes held for clients that do not read, which closes only connections that are not
 * reading, never one that makes progress.
 *
 * Each connection holds at most one response (server.ts serves one at a time). A response is counted from its `end`
 * (exchange.ts) until it closes, by what it holds: its body, or what the socket was left holding of a small one; a
 * Buffer marked shared (a cached docs asset) is counted once, however many connections hold it. A large body goes to
 * the socket a slice at a time, and each slice taken ('drain') is the client reading. Past `maxUnsentBytes`, the
 * responses not taken further for `unsentStallMs` are closed, longest stalled first, until the total is below it
 * again; then, if still over, those the kernel has taken nothing of for a tenth of that since they were written (a
 * client that never read: the bound cannot wait a whole window for them, or clients that never read would pile up a
 * window's worth of responses over it). A connection that keeps reading, however slowly, is never closed for it; while
 * the total stays over, the rest are looked at again once the next of them could have stalled (one timer per server).
 */
export const unsentBound = (
  limits: UnsentLimits,
  logger: Logger,
  close: (res: ServerResponse) => void,
): UnsentBound => {
  const holding = new Map<ServerResponse, Held>();
  const unreadMs = limits.unsentStallMs / 10;
  /** Responses holding each shared Buffer. */
  const shares = new Map<Buffer, number>();
  let unsent = 0;
  let recheck: NodeJS.Timeout | undefined;

  const release = (res: ServerResponse): void => {
    const held = holding.get(res);
    if (held === undefined) return;
    holding.delete(res);
    unsent -= held.own;
    if (held.shared === undefined) return;
    const left = (shares.get(held.shared) ?? 1) - 1;
    if (left > 0) shares.set(held.shared, left);
    else {
      shares.delete(held.shared);
      unsent -= held.shared.length;
    }
  };

  const shed = (): void => {
    const now = performance.now();
    const closable = (held: Held): boolean =>
      now - held.movedAt >= limits.unsentStallMs || (!held.moved && now - held.movedAt >= unreadMs);
    const candidates = [...holding].filter(([, held]) => closable(held));
    // Stalled ones first (moved, then stopped), then those never read; the longest waiting first within each.
    candidates.sort(([, a], [, b]) => Number(!a.moved) - Number(!b.moved) || a.movedAt - b.movedAt);
    let closed = 0;
    for (const [res] of candidates) {
      if (unsent <= limits.maxUnsentBytes) break;
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
    if (unsent > limits.maxUnsentBytes && recheck === undefined && holding.size > 0) {
      let next = Infinity;
      for (const held of holding.values()) {
        next = Math.min(next, held.movedAt + (held.moved ? limits.unsentStallMs : unreadMs));
      }
      recheck = setTimeout(
        () => {
          recheck = undefined;
          shed();
        },
        Math.max(1, Math.ceil(next - now)),
      ).unref();
    }
  };

  const hold = (res: ServerResponse, own: number, shared: Buffer | undefined) => {
    const held: Held = { own, shared, movedAt: performance.now(), moved: false };
    holding.set(res, held);
    unsent += own;
    if (shared !== undefined) {
      const holders = shares.get(shared) ?? 0;
      shares.set(shared, holders + 1);
      if (holders === 0) unsent += shared.length;
    }
    res.once('close', () => release(res));
    if (unsent > limits.maxUnsentBytes && recheck === undefined) {
      recheck = setTimeout(() => {
        recheck = undefined;
        shed();
      }, unreadMs).unref();
    }
    let first = true;
    return {
      moved: () => {
        // The first call is the first slice being written, not the client reading.
        if (first) first = false;
        else {
          held.movedAt = performance.now();
          held.moved = true;
        }
      },
    };
  };

  return { hold };
};
