import { hash } from 'node:crypto';
import * as E from 'fp-ts/lib/Either.js';
import type { Redis } from 'ioredis';
import { rateLimiterUnavailable } from '../../../application/errors.js';
import { rateDecision, type RateLimiter, type RateLimitOptions } from '../../../application/ports/rate-limiter.js';

/** One atomic step: PEXPIRE on a window's first request or a key without expiry; replies the count and ms left. */
const CONSUME = `
local count = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if count == 1 or ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {count, ttl}
`;

/** Fixed windows counted in Redis, shared by every process; a Redis that does not answer is RateLimiterUnavailable. */
export const redisRateLimiter = (redis: Redis, { max, windowMs }: RateLimitOptions): RateLimiter => ({
  consume: (key) => async () => {
    const redisKey = `plantstore:rate:${hash('sha256', key, 'hex')}`;
    try {
      const [count, ttl] = (await redis.eval(CONSUME, 1, redisKey, windowMs)) as [number, number];
      return E.right(rateDecision(max, count, ttl));
    } catch {
      return E.left(rateLimiterUnavailable);
    }
  },
});
