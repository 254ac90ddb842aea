import * as TE from 'fp-ts/lib/TaskEither.js';
import { rateDecision, type RateLimiter, type RateLimitOptions } from '../../../application/ports/rate-limiter.js';

/**
 * Fixed windows counted in process memory: exact for one process, per process when several run. Windows are aligned
 * to the clock, so every key shares the current window: the counts live in one table that is dropped whole when the
 * window ends. Expiry is O(1) per request, and memory follows the principals active in the current window.
 */
export const memoryRateLimiter = ({ max, windowMs }: RateLimitOptions, now: () => number = Date.now): RateLimiter => {
  let window = -1;
  let counts = new Map<string, number>();
  return {
    consume: (key) =>
      TE.fromIO(() => {
        const time = now();
        const index = Math.floor(time / windowMs);
        if (index !== window) {
          window = index;
          counts = new Map();
        }
        const count = (counts.get(key) ?? 0) + 1;
        counts.set(key, count);
        return rateDecision(max, count, (index + 1) * windowMs - time);
      }),
  };
};
