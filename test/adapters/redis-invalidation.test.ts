import type { Redis } from 'ioredis';
import * as O from 'fp-ts/lib/Option.js';
import * as assert from 'uvu/assert';
import { closeRedis, redisConnection, whenReady } from '../../adapters/redis/connection.js';
import { INVALIDATION_CHANNEL } from '../../adapters/tokens/redis/invalidations.js';
import { redisTokenStore, type RedisTokenStore } from '../../adapters/tokens/redis/redis-token-store.js';
import { freshOwner, right } from '../support/fixtures.js';
import { redisBinary, sharedRedis } from '../../harness/servers.js';
import { suiteWith } from '../support/suites.js';
import { startTcpProxy, type Link, type TcpProxy } from '../support/tcp-proxy.js';

/**
 * AUTH=redis with the token cache on, and the connection that carries Redis's invalidations cut, refused or held
 * silent by a TCP proxy between the store and Redis: the cache is not trusted while that stream is not whole, so a
 * token revoked meanwhile (on another connection, as by the CLI on another host) is refused.
 */
const binary = redisBinary();

interface Subject {
  readonly proxy: TcpProxy;
  /** A connection straight to Redis, as the CLI of another host would have. */
  readonly direct: Redis;
  readonly cli: RedisTokenStore;
  /** A token store through the proxy, with the cache on (60 s) and the given heartbeat and lease; `close` ends it. */
  readonly serviceStore: (timing?: {
    heartbeatMs: number;
    leaseMs: number;
  }) => Promise<RedisTokenStore & { readonly end: () => Promise<void> }>;
  readonly teardown: () => Promise<void>;
}

const { test, subject, run } = suiteWith<Subject>(
  'AUTH=redis token cache when the invalidation connection fails',
  'skip' in binary
    ? binary
    : async () => {
        const server = await sharedRedis(binary.bin);
        const proxy = await startTcpProxy(server.port);
        const direct = redisConnection(server.uri, 2000);
        await whenReady(direct, 5000);
        return {
          proxy,
          direct,
          cli: redisTokenStore(direct, { cacheTtlMs: 0 }),
          serviceStore: async (timing) => {
            const redis = redisConnection(`redis://127.0.0.1:${proxy.port}`, 2000);
            await whenReady(redis, 5000);
            const store = redisTokenStore(redis, { cacheTtlMs: 60_000, ...timing });
            await until(() => store.cacheLive(), 5000, 'the invalidation stream is set up');
            return {
              ...store,
              end: async () => {
                await store.close();
                await closeRedis(redis);
              },
            };
          },
          teardown: async () => {
            proxy.refuse(false);
            proxy.releaseAll();
            await closeRedis(direct);
            await proxy.close();
          },
        };
      },
);

/** Polls `condition` every millisecond or so, failing after `ms`. */
const until = async (condition: () => boolean, ms: number, what: string) => {
  const limit = performance.now() + ms;
  while (!condition()) {
    assert.ok(performance.now() < limit, `${what} within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 1));
  }
};

/** The proxied connection that subscribed to the invalidation channel (the store's), still open. */
const invalidationLink = (proxy: TcpProxy): Link => {
  const links = proxy.links().filter((l) => !l.closed() && l.sent().includes(INVALIDATION_CHANNEL));
  assert.is(links.length, 1, 'one open invalidation connection through the proxy');
  return links[0] as Link;
};

/** How many HGETALLs Redis has run so far: a lookup served from the cache runs none. */
const lookups = async (redis: Redis) =>
  Number(/cmdstat_hgetall:calls=(\d+)/.exec(await redis.info('commandstats'))?.[1] ?? 0);

/**
 * Issues a token and looks it up until a lookup is served from the cache. (Issuing changes the token's key, and
 * Redis reports that change too: a lookup answered while that report is on its way is, rightly, not cached.)
 */
const cachedToken = async (cli: RedisTokenStore, direct: Redis, store: RedisTokenStore) => {
  const token = await right(cli.issue({ owner: freshOwner(), subject: 's', scopes: ['plants:read'] }));
  for (let attempt = 0; attempt < 50; attempt++) {
    const before = await lookups(direct);
    assert.ok(O.isSome(await right(store.verifier.verify(token))));
    if ((await lookups(direct)) === before) return token;
    await new Promise((r) => setTimeout(r, 2));
  }
  throw new Error('the token was never served from the cache');
};

test('the invalidation connection cut and not allowed back: the cache is not trusted, a revoked token is refused', async (ctx) => {
  const { proxy, cli, direct, serviceStore } = subject(ctx);
  const store = await serviceStore();
  try {
    const token = await cachedToken(cli, direct, store);
    proxy.refuse(true); // a network that lets no new connection through
    invalidationLink(proxy).cut();
    await until(() => !store.cacheLive(), 1000, 'the cut is noticed');
    assert.ok(await right(cli.revoke(token)), 'revoked straight in Redis; no invalidation can reach the store');
    assert.equal(await right(store.verifier.verify(token)), O.none, 'refused: the lookup went to Redis');
    proxy.refuse(false);
    await until(() => store.cacheLive(), 5000, 'the invalidation stream is set up again once it can be');
    const fresh = await cachedToken(cli, direct, store);
    assert.ok(await right(cli.revoke(fresh)));
    const revokedAt = performance.now();
    while (O.isSome(await right(store.verifier.verify(fresh)))) {
      assert.ok(performance.now() - revokedAt < 100, 'invalidations reach the cache again after the reconnect');
      await new Promise((r) => setImmediate(r));
    }
  } finally {
    proxy.refuse(false);
    await store.end();
  }
});

test('the invalidation connection held silent: the cache stops being trusted within the lease, then starts over', async (ctx) => {
  const { proxy, cli, direct, serviceStore } = subject(ctx);
  const leaseMs = 400;
  const store = await serviceStore({ heartbeatMs: 100, leaseMs });
  let silent: Link | undefined;
  try {
    const token = await cachedToken(cli, direct, store);
    silent = invalidationLink(proxy);
    silent.hold('both'); // nothing in or out, and no close either: only the missing heartbeat tells
    const heldAt = performance.now();
    assert.ok(await right(cli.revoke(token)));
    while (O.isSome(await right(store.verifier.verify(token)))) {
      assert.ok(performance.now() - heldAt < leaseMs + 300, `refused within the ${leaseMs} ms lease`);
      await new Promise((r) => setTimeout(r, 5));
    }
    await until(() => store.cacheLive(), 5000, 'a new invalidation connection is set up');
    const fresh = await cachedToken(cli, direct, store);
    assert.ok(await right(cli.revoke(fresh)));
    const revokedAt = performance.now();
    while (O.isSome(await right(store.verifier.verify(fresh)))) {
      assert.ok(performance.now() - revokedAt < 100, 'invalidations reach the cache on the new connection');
      await new Promise((r) => setImmediate(r));
    }
  } finally {
    silent?.cut();
    await store.end();
  }
});

run();
