import * as E from 'fp-ts/lib/Either.js';
import * as O from 'fp-ts/lib/Option.js';
import * as TE from 'fp-ts/lib/TaskEither.js';
import type { Principal } from '../../domain/principal.js';
import type { RateDecision, RateLimiter } from '../ports/rate-limiter.js';

/** The principal has used its allowance for this window. */
export interface RateLimited {
  readonly _tag: 'RateLimited';
  readonly decision: RateDecision;
}

/**
 * Charges one request to the principal (its owner and subject together). Over the allowance: RateLimited. When
 * the limiter cannot decide, the request is admitted with no decision to report.
 */
export const admitRequest =
  ({ limiter }: { readonly limiter: RateLimiter }) =>
  (principal: Principal): TE.TaskEither<RateLimited, O.Option<RateDecision>> =>
  async () => {
    const decision = await limiter.consume(`${principal.owner}\u0000${principal.subject}`)();
    if (O.isSome(decision) && !decision.value.allowed) {
      return E.left({ _tag: 'RateLimited', decision: decision.value });
    }
    return E.right(decision);
  };
