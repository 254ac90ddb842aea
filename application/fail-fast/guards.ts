import { left } from 'fp-ts/lib/Either.js';
import type { TaskEither } from 'fp-ts/lib/TaskEither.js';
import { authUnavailable, rateLimiterUnavailable, storageUnavailable, type AuthUnavailable } from '../errors.js';
import type { BackendMetrics, CallOutcome } from '../ports/backend-metrics.js';
import type { PlantRepository } from '../ports/plant-repository.js';
import type { RateLimiter } from '../ports/rate-limiter.js';
import type { TokenVerifier } from '../ports/token-verifier.js';
import type { BackendName, Breakers } from './breakers.js';

/** The breakers, and where each call's duration and outcome go. */
export interface FailFast {
  readonly breakers: Breakers;
  readonly metrics: BackendMetrics | undefined;
}

/**
 * One backend's calls, each admitted by its breaker, timed into the metrics, and its outcome reported. Only a Left
 * with the `_tag` of `refused` (the backend did not answer) opens the breaker, never what a caller made of it: a
 * Right, another Left (a full store) and a StorageUnavailable the store answered (`contended`: the request's own
 * writes collided) are its answers; a throw (a fault, a 500 for that request, whatever a caller made the backend or
 * this code throw) counts neither way. A call the breaker refuses answers `refused` at once.
 */
export const guard =
  <R extends { readonly _tag: string }>(failFast: FailFast, backend: BackendName, refused: R) =>
  <E extends { readonly _tag: string }, A>(operation: string, task: TaskEither<E, A>): TaskEither<E | R, A> =>
  async () => {
    const { breakers, metrics } = failFast;
    const admitted = breakers.admit(backend);
    if (admitted === 'refuse') {
      metrics?.observeCall(backend, operation, 'unavailable', 0);
      return left(refused);
    }
    const started = performance.now();
    const answersBefore = breakers.answers(backend);
    const report = (outcome: CallOutcome) => {
      const ms = performance.now() - started;
      metrics?.observeCall(backend, operation, outcome, ms / 1000);
      if (admitted === 'probe') breakers.probed(backend);
      return ms;
    };
    let result;
    try {
      result = await task();
    } catch (e) {
      report('error');
      throw e;
    }
    if (result._tag === 'Right') {
      report('ok');
      breakers.answered(backend);
    } else if (result.left._tag !== refused._tag || (result.left as { contended?: unknown }).contended === true) {
      report('unavailable');
      breakers.answered(backend);
    } else {
      const ms = report('unavailable');
      breakers.failed(backend, `no answer (gave up after ${Math.round(ms)} ms)`, answersBefore);
    }
    return result;
  };

/** The store's calls, each guarded by its breaker: every one reaches the store. */
export const failFastPlants = (plants: PlantRepository, failFast: FailFast): PlantRepository => {
  const storage = guard(failFast, 'storage', storageUnavailable);
  return {
    insert: (owner, plant, maxPlants) => storage('insert', plants.insert(owner, plant, maxPlants)),
    page: (owner, after, limit) => storage('page', plants.page(owner, after, limit)),
    remove: (owner, id) => storage('remove', plants.remove(owner, id)),
    ping: storage('ping', plants.ping),
  };
};

/** A token verifier whose every call reaches its backend (Redis): each is guarded by the token store's breaker. */
export const failFastTokens = (tokens: TokenVerifier, failFast: FailFast): TokenVerifier => {
  const store = tokenStoreGuard(failFast);
  return {
    verify: (token, rejected) => store('verify', tokens.verify(token, rejected)),
    ping: store('ping', tokens.ping),
  };
};

/**
 * The token store's breaker, for a verifier that reaches its backend on some calls only (a JWKS URL, fetched when a
 * key is not cached or too old): it guards those calls itself, so that a token whose key is cached never meets the
 * breaker, and one caller's unknown key ids cost at most one fetch a second while the key source is down.
 */
export const tokenStoreGuard = (failFast: FailFast) => guard(failFast, 'token store', authUnavailable);

/** The calls of a verifier that guards its own backend calls (`tokenStoreGuard`): only timed, never refused. */
export const timedTokens = (tokens: TokenVerifier, metrics: BackendMetrics | undefined): TokenVerifier => {
  const timed =
    <A>(operation: string, task: TaskEither<AuthUnavailable, A>): TaskEither<AuthUnavailable, A> =>
    async () => {
      const started = performance.now();
      const seconds = () => (performance.now() - started) / 1000;
      let result;
      try {
        result = await task();
      } catch (e) {
        metrics?.observeCall('token store', operation, 'error', seconds());
        throw e;
      }
      metrics?.observeCall('token store', operation, result._tag === 'Right' ? 'ok' : 'unavailable', seconds());
      return result;
    };
  return {
    verify: (token, rejected) => timed('verify', tokens.verify(token, rejected)),
    ping: timed('ping', tokens.ping),
  };
};

/** The limiter, guarded like the other backends; every refusal it decides is counted too. */
export const failFastLimiter = (limiter: RateLimiter, failFast: FailFast): RateLimiter => {
  const store = guard(failFast, 'rate limiter', rateLimiterUnavailable);
  return {
    consume: (key) => async () => {
      const decision = await store('consume', limiter.consume(key))();
      if (decision._tag === 'Right' && !decision.right.allowed) failFast.metrics?.rateLimited();
      return decision;
    },
  };
};
