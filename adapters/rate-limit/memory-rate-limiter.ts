import * as O from 'fp-ts/lib/Option.js';
import * as T from 'fp-ts/lib/Task.js';
import type { RateLimiter } from '../../application/ports/rate-limiter.js';

export interface RateLimitOptions {
  /** Requests allowed per window. */
  readonly max: number;
  readonly windowMs: number;
}

/**
 * Fixed windows counted in process memory: exact for one process, per process when several run. Windows that have
 * ended are swept as the table grows, so memory follows the number of active principals.
 */
export const memoryRateLimiter = ({ max, windowMs }: RateLimitOptions, now: () => number = Date.now): RateLimiter => {
  const windows = new Map<string, { index: number; count: number }>();
  const sweepAt = 10_000;

  return {
    consume: (key) =>
      T.fromIO(() => {
        const time = now();
        const index = Math.floor(time / windowMs);
        let window = windows.get(key);
        if (window === undefined || window.index !== index) {
          if (windows.size >= sweepAt) for (const [k, w] of windows) if (w.index !== index) windows.delete(k);
          window = { index, count: 0 };
          windows.set(key, window);
        }
        window.count++;
        return O.some({
          allowed: window.count <= max,
          limit: max,
          remaining: Math.max(0, max - window.count),
          resetSeconds: Math.max(1, Math.ceil(((index + 1) * windowMs - time) / 1000)),
        });
      }),
  };
};
