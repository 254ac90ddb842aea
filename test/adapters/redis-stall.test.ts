import * as E from 'fp-ts/lib/Either.js';
import * as assert from 'uvu/assert';
import { closeRedis, redisConnection, whenReady } from '../../adapters/redis/connection.js';
import { redisRateLimiter } from '../../adapters/rate-limit/redis/redis-rate-limiter.js';
import { redisTokenStore } from '../../adapters/tokens/redis/redis-token-store.js';
import { redisBinary, sharedRedis } from '../../harness/servers.js';
import { suiteWith } from '../support/suites.js';
import { startTcpProxy } from '../support/tcp-proxy.js';

/**
 * A Redis that stops answering on a live connection (blocked by a slow command, a paused host, a network that drops
 * packets without a reset). Every request still sends its command; what the process holds for them must not grow
 * with the length of the stall, and requests must not each wait the whole bound.
 */
const TIMEOUT_MS = 200;
const binary = redisBinary();
const { test, subject, run } = suiteWith(
  'Redis silent on a live connection',
  'skip' in binary ? binary : async () => ({ uri: (await sharedRedis(binary.bin)).uri }),
);

type Call = () => Promise<E.Either<unknown, unknown>>;
const backends: Record<string, (redis: ReturnType<typeof redisConnection>) => Call> = {
  'rate limiter': (redis: ReturnType<typeof redisConnection>) => {
    const limiter = redisRateLimiter(redis, { max: 1000, windowMs: 60_000 });
    return () => limiter.consume(`stall-${Date.now()}`)();
  },
  'token store': (redis: ReturnType<typeof redisConnection>) => {
    const store = redisTokenStore(redis, { cacheTtlMs: 0 });
    return () => store.verifier.verify('stall-token')();
  },
};

for (const [name, make] of Object.entries(backends)) {
  test(`${name}: the silent connection is given up after the bound; later calls fail at once and send nothing to it`, async (ctx) => {
    const { uri } = subject(ctx);
    const proxy = await startTcpProxy(Number(new URL(uri).port));
    const redis = redisConnection(`redis://127.0.0.1:${proxy.port}`, TIMEOUT_MS);
    try {
      assert.ok(await whenReady(redis, 5000));
      const call = make(redis);
      assert.ok(E.isRight(await call()), 'answered before the stall');
      const [silent] = proxy.links();
      proxy.holdUpstream(); // from now on nothing reaches Redis, on this connection or a new one

      assert.ok(E.isLeft(await call()), 'unavailable during the stall');
      await new Promise((r) => setTimeout(r, TIMEOUT_MS * 2)); // past the bound with nothing received: given up
      const sentBefore = silent?.sent().length;
      // Each later call fails without a byte sent, so nothing it could wait for: it does not wait out the bound.
      for (let i = 0; i < 50; i++) assert.ok(E.isLeft(await call()));
      assert.is(silent?.sent().length, sentBefore, 'nothing more was written to the silent connection');
    } finally {
      proxy.releaseAll();
      await closeRedis(redis);
      await proxy.close();
    }
  });
}

run();
