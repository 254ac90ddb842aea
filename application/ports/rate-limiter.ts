import type { TaskEither } from 'fp-ts/lib/TaskEither.js';
import type { RateLimiterUnavailable } from '../errors.js';

/** What one request used of its principal's allowance in the current window. */
export interface RateDecision {
  readonly allowed: boolean;
  /** Requests allowed per window. */
  readonly limit: number;
  /** Requests left in this window after this one. */
  readonly remaining: number;
  /** Seconds until the window resets. */
  readonly resetSeconds: number;
}

/** The allowance every principal gets: `max` requests per fixed window of `windowMs`, aligned to the clock. */
export interface RateLimitOptions {
  readonly max: number;
  readonly windowMs: number;
}

/** The allowance left after the `count`-th request of a window that ends in `msLeft` ms. */
export const rateDecision = (max: number, count: number, msLeft: number): RateDecision => ({
  allowed: count <= max,
  limit: max,
  remaining: Math.max(0, max - count),
  resetSeconds: Math.max(1, Math.ceil(msLeft / 1000)),
});

/** Fixed-window counts per key; a store that cannot answer is `RateLimiterUnavailable` (rate-limiter.contract.ts). */
export interface RateLimiter {
  readonly consume: (key: string) => TaskEither<RateLimiterUnavailable, RateDecision>;
}
