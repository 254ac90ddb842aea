import * as E from 'fp-ts/lib/Either.js';
import * as O from 'fp-ts/lib/Option.js';
import type { TaskEither } from 'fp-ts/lib/TaskEither.js';
import type { Principal } from '../../domain/principal.js';
import type { Logger } from '../ports/logger.js';
import type { RateDecision, RateLimiter } from '../ports/rate-limiter.js';

/** The principal has used its allowance for this window. */
export interface RateLimited {
  readonly _tag: 'RateLimited';
  readonly decision: RateDecision;
}

/** How often, at most, an unavailable limiter is reported in the log. */
export const LIMITER_WARNING_INTERVAL_MS = 10_000;

export interface AdmitRequestPorts {
  readonly limiter: RateLimiter;
  readonly logger: Logger;
  readonly now?: () => number;
}

/**
 * Charges one request to the principal; over the allowance: RateLimited. A limiter that cannot decide admits it (fail
 * open: it protects capacity, authentication fails closed), warned at most every LIMITER_WARNING_INTERVAL_MS.
 */
export const admitRequest = ({ limiter, logger, now = Date.now }: AdmitRequestPorts) => {
  let lastWarning = -Infinity;
  return (principal: Principal): TaskEither<RateLimited, O.Option<RateDecision>> =>
    async () => {
      const decision = await limiter.consume(`${principal.owner}\u0000${principal.subject}`)();
      if (E.isLeft(decision)) {
        if (now() - lastWarning >= LIMITER_WARNING_INTERVAL_MS) {
          lastWarning = now();
          logger.warn({ backend: 'rate limiter' }, 'rate limiter store unavailable: letting requests through');
        }
        return E.right(O.none);
      }
      return decision.right.allowed
        ? E.right(O.some(decision.right))
        : E.left({ _tag: 'RateLimited', decision: decision.right });
    };
};
