import * as E from 'fp-ts/lib/Either.js';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { memoryRateLimiter } from '../../adapters/rate-limit/memory/memory-rate-limiter.js';
import { redisRateLimiter } from '../../adapters/rate-limit/redis/redis-rate-limiter.js';
import { closeRedis, redisConnection, whenReady } from '../../adapters/redis/connection.js';
import { rateLimiterContract } from '../contracts/rate-limiter.contract.js';
import { right } from '../support/fixtures.js';
import { freePort, redisBinary, sharedRedis } from '../../harness/servers.js';

rateLimiterContract('memory', async () => ({
  make: (max, windowMs) => memoryRateLimiter({ max, windowMs }),
  teardown: async () => {},
}));

const redisBin = redisBinary();
rateLimiterContract(
  'redis',
  'skip' in redisBin
    ? redisBin
    : async () => {
        const redis = redisConnection((await sharedRedis(redisBin.bin)).uri, 2000);
        await whenReady(redis, 5000);
        return {
          make: (max, windowMs) => redisRateLimiter(redis, { max, windowMs }),
          teardown: () => closeRedis(redis),
        };
      },
);

const memory = suite('memory rate limiter');

memory('a new window starts every count again', async () => {
  let now = 1_000_000;
  const limiter = memoryRateLimiter({ max: 2, windowMs: 1000 }, () => now);
  const used = async () => {
    const d = await right(limiter.consume('k'));
    return [d.allowed, d.remaining, d.resetSeconds];
  };
  assert.equal(await used(), [true, 1, 1]);
  assert.equal(await used(), [true, 0, 1]);
  assert.equal(await used(), [false, 0, 1]);
  now += 1000;
  assert.equal(await used(), [true, 1, 1]);
});

memory('a new principal costs the same with 40,000 live principals as with none (expiry is O(1))', async () => {
  let now = 0;
  const limiter = memoryRateLimiter({ max: 5, windowMs: 60_000 }, () => now);
  /** CPU time of `n` first requests of new principals, each in the same window. */
  const cost = async (n: number, label: string) => {
    const started = process.cpuUsage();
    for (let i = 0; i < n; i++) await limiter.consume(`${label}-${i}`)();
    const used = process.cpuUsage(started);
    return used.user + used.system;
  };
  const small = await cost(2_000, 'small');
  now += 60_000; // a new window: the earlier principals are gone
  await cost(40_000, 'fill');
  const large = await cost(2_000, 'large');
  // Linear sweeping (the old limiter) made each new principal scan every live one: thousands of times the cost.
  assert.ok(large < small * 20 + 50_000, `2,000 new principals: ${small} µs alone, ${large} µs beside 40,000`);
});

memory.run();

const redisDown = suite('redis rate limiter without a server');

redisDown('a Redis that does not answer is RateLimiterUnavailable', async () => {
  const redis = redisConnection(`redis://127.0.0.1:${await freePort()}`, 300);
  try {
    const result = await redisRateLimiter(redis, { max: 1, windowMs: 1000 }).consume('k')();
    assert.equal(result, E.left({ _tag: 'RateLimiterUnavailable' }));
  } finally {
    await closeRedis(redis);
  }
});

redisDown.run();
