import { randomUUID } from 'node:crypto';
import * as assert from 'uvu/assert';
import type { RateLimiter } from '../../application/ports/rate-limiter.js';
import { right } from '../support/fixtures.js';
import { suiteWith, type Setup } from '../support/suites.js';

export interface RateLimiterUnderTest {
  /** A limiter allowing `max` requests per window of `windowMs`. */
  readonly make: (max: number, windowMs: number) => RateLimiter;
  readonly teardown: () => Promise<void>;
}

const WINDOW_MS = 60_000;
const key = () => `key-${randomUUID()}`;

/** The rate-limiter port's contract: every RateLimiter adapter runs this same suite. */
export const rateLimiterContract = (adapter: string, setup: Setup<RateLimiterUnderTest>): void => {
  const { test, subject, run } = suiteWith(`RateLimiter contract [${adapter}]`, setup);

  test('each request of a window is counted, and the one past the limit is refused', async (ctx) => {
    const limiter = subject(ctx).make(3, WINDOW_MS);
    const k = key();
    const decisions = [];
    for (let i = 0; i < 4; i++) decisions.push(await right(limiter.consume(k)));
    assert.equal(
      decisions.map((d) => [d.allowed, d.limit, d.remaining]),
      [
        [true, 3, 2],
        [true, 3, 1],
        [true, 3, 0],
        [false, 3, 0],
      ],
    );
  });

  test('the reset is within the window, in whole seconds of at least 1', async (ctx) => {
    const d = await right(subject(ctx).make(5, WINDOW_MS).consume(key()));
    assert.ok(d.resetSeconds >= 1 && d.resetSeconds <= WINDOW_MS / 1000, `reset ${d.resetSeconds}`);
  });

  test('keys have allowances of their own', async (ctx) => {
    const limiter = subject(ctx).make(1, WINDOW_MS);
    const [a, b] = [key(), key()];
    assert.is((await right(limiter.consume(a))).allowed, true);
    assert.is((await right(limiter.consume(a))).allowed, false);
    assert.is((await right(limiter.consume(b))).allowed, true);
  });

  test('of 50 concurrent requests at a limit of 10, exactly 10 are allowed and every count is used once', async (ctx) => {
    const limiter = subject(ctx).make(10, WINDOW_MS);
    const k = key();
    const decisions = await Promise.all(Array.from({ length: 50 }, () => right(limiter.consume(k))));
    assert.is(decisions.filter((d) => d.allowed).length, 10);
    const remaining = decisions.filter((d) => d.allowed).map((d) => d.remaining);
    assert.equal(
      remaining.sort((x, y) => x - y),
      [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
    );
  });

  run();
};
