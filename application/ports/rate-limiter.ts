import type { Option } from 'fp-ts/lib/Option.js';
import type { Task } from 'fp-ts/lib/Task.js';

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

/**
 * Counts requests per key in fixed windows. `none` means the limiter could not decide (its store is down): the
 * request goes through, because the limiter protects capacity and authentication is what fails closed.
 */
export interface RateLimiter {
  readonly consume: (key: string) => Task<Option<RateDecision>>;
}
