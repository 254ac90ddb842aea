import * as E from 'fp-ts/lib/Either.js';
import * as O from 'fp-ts/lib/Option.js';
import * as TE from 'fp-ts/lib/TaskEither.js';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { rateLimiterUnavailable } from '../../application/errors.js';
import type { Logger } from '../../application/ports/logger.js';
import { rateDecision, type RateLimiter } from '../../application/ports/rate-limiter.js';
import { admitRequest, LIMITER_WARNING_INTERVAL_MS } from '../../application/use-cases/admit-request.js';
import { principal } from '../support/fixtures.js';

/** A logger that keeps its warnings. */
const recording = () => {
  const warnings: string[] = [];
  const logger: Logger = {
    debug: () => {},
    info: () => {},
    error: () => {},
    warn: (_f, message) => warnings.push(message),
  };
  return { logger, warnings };
};

const down: RateLimiter = { consume: () => TE.left(rateLimiterUnavailable) };

const test = suite('admit-request');

test('a request within the allowance is admitted with the decision to report', async () => {
  const decision = rateDecision(3, 1, 30_000);
  const admit = admitRequest({ limiter: { consume: () => TE.right(decision) }, logger: recording().logger });
  assert.equal(await admit(principal())(), E.right(O.some(decision)));
});

test('a request past the allowance is RateLimited with the decision', async () => {
  const decision = rateDecision(3, 4, 30_000);
  const admit = admitRequest({ limiter: { consume: () => TE.right(decision) }, logger: recording().logger });
  assert.equal(await admit(principal())(), E.left({ _tag: 'RateLimited', decision }));
});

test('the allowance is charged to owner and subject together', async () => {
  const keys: string[] = [];
  const limiter: RateLimiter = { consume: (k) => (keys.push(k), TE.right(rateDecision(9, 1, 1000))) };
  const who = principal();
  await admitRequest({ limiter, logger: recording().logger })(who)();
  assert.equal(keys, [`${who.owner}\u0000${who.subject}`]);
});

test('when the limiter cannot decide, the request is admitted with nothing to report', async () => {
  const admit = admitRequest({ limiter: down, logger: recording().logger });
  assert.equal(await admit(principal())(), E.right(O.none));
});

test('an unavailable limiter is reported once per interval, not once per request', async () => {
  let now = 5_000_000;
  const { logger, warnings } = recording();
  const admit = admitRequest({ limiter: down, logger, now: () => now });
  for (let i = 0; i < 5; i++) await admit(principal())();
  assert.is(warnings.length, 1);
  now += LIMITER_WARNING_INTERVAL_MS - 1;
  await admit(principal())();
  assert.is(warnings.length, 1);
  now += 1;
  await admit(principal())();
  assert.is(warnings.length, 2);
});

test.run();
