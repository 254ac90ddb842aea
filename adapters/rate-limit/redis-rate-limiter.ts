import { createHash } from 'node:crypto';
import * as O from 'fp-ts/lib/Option.js';
import type { Redis } from 'ioredis';
import type { Logger } from '../../application/ports/logger.js';
import type { RateLimiter } from '../../application/ports/rate-limiter.js';
import type { RateLimitOptions } from './memory-rate-limiter.js';

/**
 * Count and expiry in one atomic step: the first request of a window starts it (PEXPIRE), every request increments
 * it, and the reply carries the count and the milliseconds left. A key left without expiry is given one again.
 */
const CONSUME = `
local count = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if count == 1 or ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {count, ttl}
`;

/**
 * Fixed windows counted in Redis, shared by every process of the service. When Redis does not answer, requests are
 * let through and a warning is logged (at most every 10 s): the limiter protects capacity, it does not authenticate.
 */
export const redisRateLimiter = (redis: Redis, { max, windowMs }: RateLimitOptions, logger: Logger): RateLimiter => {
  let lastWarning = 0;
  return {
    consume: (key) => async () => {
      const redisKey = `plantstore:rate:${createHash('sha256').update(key).digest('hex')}`;
      try {
        const [count, ttl] = (await redis.eval(CONSUME, 1, redisKey, windowMs)) as [number, number];
        return O.some({
          allowed: count <= max,
          limit: max,
          remaining: Math.max(0, max - count),
          resetSeconds: Math.max(1, Math.ceil(ttl / 1000)),
        });
      } catch (e) {
        if (Date.now() - lastWarning > 10_000) {
          lastWarning = Date.now();
          logger.warn(
            { err: e instanceof Error ? e.message : String(e) },
            'rate limiter store unavailable: letting requests through',
          );
        }
        return O.none;
      }
    },
  };
};
