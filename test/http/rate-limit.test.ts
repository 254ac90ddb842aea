import { Writable } from 'node:stream';
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { pino } from 'pino';
import * as assert from 'uvu/assert';
import type { RateLimiter } from '../../application/ports/rate-limiter.js';
import { memoryRateLimiter } from '../../adapters/rate-limit/memory/memory-rate-limiter.js';
import { redisRateLimiter } from '../../adapters/rate-limit/redis/redis-rate-limiter.js';
import { closeRedis, redisConnection, whenReady } from '../../adapters/redis/connection.js';
import { startService } from '../support/http.js';
import { redisBinary, sharedRedis, startRedis } from '../../harness/servers.js';
import { suiteWith, type Setup } from '../support/suites.js';

const WINDOW_MS = 60_000;

interface LimiterUnderTest {
  readonly make: (max: number) => RateLimiter;
  readonly teardown: () => Promise<void>;
}

const redisBin = redisBinary();
const limiters: Array<{ name: string; setup: Setup<LimiterUnderTest> }> = [
  {
    name: 'memory',
    setup: async () => ({ make: (max) => memoryRateLimiter({ max, windowMs: WINDOW_MS }), teardown: async () => {} }),
  },
  {
    name: 'redis',
    setup:
      'skip' in redisBin
        ? redisBin
        : async () => {
            const redis = redisConnection((await sharedRedis(redisBin.bin)).uri, 2000);
            await whenReady(redis, 5000);
            return {
              make: (max) => redisRateLimiter(redis, { max, windowMs: WINDOW_MS }),
              teardown: () => closeRedis(redis),
            };
          },
  },
];

for (const limiter of limiters) {
  const { test, subject, run } = suiteWith(`rate limits over HTTP [${limiter.name}]`, limiter.setup);
  const limiterOf = (ctx: Parameters<typeof subject>[0], max: number) => subject(ctx).make(max);

  test('the request that crosses the limit is the one that gets 429, with Retry-After and RateLimit fields', async (ctx) => {
    const svc = await startService({ limiter: limiterOf(ctx, 3) });
    try {
      for (const remaining of [2, 1, 0]) {
        const res = await svc.call('GET', '/plants', { token: svc.token.alice });
        assert.is(res.status, 200);
        assert.is(res.headers.get('ratelimit-limit'), '3');
        assert.is(res.headers.get('ratelimit-remaining'), String(remaining));
        const reset = Number(res.headers.get('ratelimit-reset'));
        assert.ok(reset >= 1 && reset <= 60, `reset ${reset}`);
      }
      const over = await svc.call('GET', '/plants', { token: svc.token.alice });
      assert.is(over.status, 429);
      const retry = Number(over.headers.get('retry-after'));
      assert.ok(retry >= 1 && retry <= 60, `retry-after ${retry}`);
      assert.is(over.headers.get('ratelimit-remaining'), '0');
      assert.is(over.headers.get('ratelimit-limit'), '3');
      assert.match(
        (over.json() as { message: string }).message,
        /^too many requests: at most 3 per window; retry in \d+ s$/,
      );
      assert.is(
        (await svc.call('POST', '/plants', { token: svc.token.alice, body: '{"id":1,"name":"x"}' })).status,
        429,
        'every operation counts',
      );
    } finally {
      await svc.close();
    }
  });

  test('an admitted request refused later (400, 403 scope) still carries its RateLimit fields', async (ctx) => {
    const svc = await startService({ limiter: limiterOf(ctx, 5) });
    try {
      const bad = await svc.call('GET', '/plants?limit=0', { token: svc.token.alice });
      assert.is(bad.status, 400);
      assert.is(bad.headers.get('ratelimit-remaining'), '4');
      const scope = await svc.call('POST', '/plants', { token: svc.token.aliceReader, body: '{"id":1,"name":"x"}' });
      assert.is(scope.status, 403);
      assert.is(scope.headers.get('ratelimit-limit'), '5');
    } finally {
      await svc.close();
    }
  });

  test('limits are per principal, and unauthenticated requests are not counted against anyone', async (ctx) => {
    const svc = await startService({ limiter: limiterOf(ctx, 1) });
    try {
      for (let i = 0; i < 3; i++) assert.is((await svc.call('GET', '/plants')).status, 401);
      assert.is((await svc.call('GET', '/plants', { token: svc.token.alice })).status, 200);
      assert.is((await svc.call('GET', '/plants', { token: svc.token.alice })).status, 429);
      assert.is((await svc.call('GET', '/plants', { token: svc.token.bob })).status, 200, 'bob has his own allowance');
      assert.is(
        (await svc.call('GET', '/plants', { token: svc.token.aliceReader })).status,
        200,
        'another subject of the same owner too',
      );
      assert.is((await svc.call('GET', '/healthz')).status, 200, 'operational endpoints are not limited');
    } finally {
      await svc.close();
    }
  });

  run();
}

const {
  test: downTest,
  subject: downSubject,
  run: runDown,
} = suiteWith('rate limiter with Redis down', 'skip' in redisBin ? redisBin : async () => ({ bin: redisBin.bin }));
downTest('requests go through, no RateLimit fields are claimed, and a warning is logged', async (ctx) => {
  const server = await startRedis(downSubject(ctx).bin);
  const redis: Redis = redisConnection(server.uri, 500);
  await whenReady(redis, 5000);
  const lines: string[] = [];
  const logger = pino(
    { level: 'info', base: null },
    new Writable({ write: (c: Buffer, _e, done) => (lines.push(c.toString()), done()) }),
  );
  const svc = await startService({ limiter: redisRateLimiter(redis, { max: 1, windowMs: WINDOW_MS }), logger });
  try {
    await server.stop(true);
    for (let i = 0; i < 3; i++) {
      const res = await svc.call('GET', '/plants', {
        token: svc.token.alice,
        headers: { 'x-request-id': randomUUID() },
      });
      assert.is(res.status, 200);
      assert.is(res.headers.get('ratelimit-limit'), null);
    }
    assert.ok(
      lines.some((l) => l.includes('rate limiter store unavailable')),
      'warned',
    );
  } finally {
    await svc.close();
    await closeRedis(redis);
    await server.dispose();
  }
});
runDown();
