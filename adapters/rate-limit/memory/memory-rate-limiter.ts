import * as TE from 'fp-ts/lib/TaskEither.js';
import { rateDecision, type RateLimiter, type RateLimitOptions } from '../../../application/ports/rate-limiter.js';

/**
 * Fixed windows in process memory (per process when several run), aligned to the clock: the counts of the current
 * window live in one table dropped whole when it ends, so expiry is O(1) and memory follows the active principals.
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
