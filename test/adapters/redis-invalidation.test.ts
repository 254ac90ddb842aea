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
import { eventually, sleep } from '../support/wait.js';

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
            await eventually('the invalidation stream is set up', () => store.cacheLive(), { everyMs: 1 });
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
  await eventually(
    'the token is served from the cache',
    async () => {
      const before = await lookups(direct);
      assert.ok(O.isSome(await right(store.verifier.verify(token))));
      return (await lookups(direct)) === before;
    },
    { everyMs: 2 },
  );
  return token;
};

/**
 * Looks `token` up until it is refused: Redis sends the invalidation before it answers the DEL, but on another
 * connection, so in this one process the DEL's answer can be read first. What is held is the order: refused while the
 * cached entry is still live (before half its 60 s TTL), which a store that missed the invalidation would serve.
 */
const refusedSoon = async (store: RedisTokenStore, token: string, what: string) => {
  const revokedAt = performance.now();
  while (O.isSome(await right(store.verifier.verify(token)))) {
    assert.ok(performance.now() - revokedAt < 30_000, `${what} (refused while the cache entry is live; TTL 60 s)`);
    await new Promise((r) => setImmediate(r));
  }
};

test('the invalidation connection cut and not allowed back: the cache is not trusted, a revoked token is refused', async (ctx) => {
  const { proxy, cli, direct, serviceStore } = subject(ctx);
  const store = await serviceStore();
  try {
    const token = await cachedToken(cli, direct, store);
    proxy.refuse(true); // a network that lets no new connection through
    invalidationLink(proxy).cut();
    await eventually('the cut is noticed', () => !store.cacheLive(), { everyMs: 1 });
    assert.ok(await right(cli.revoke(token)), 'revoked straight in Redis; no invalidation can reach the store');
    assert.equal(await right(store.verifier.verify(token)), O.none, 'refused: the lookup went to Redis');
    proxy.refuse(false);
    await eventually('the invalidation stream is set up again once it can be', () => store.cacheLive(), {
      everyMs: 1,
    });
    const fresh = await cachedToken(cli, direct, store);
    assert.ok(await right(cli.revoke(fresh)));
    await refusedSoon(store, fresh, 'invalidations reach the cache again after the reconnect');
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
    // The time is the contract: the cache stops being trusted once a lease passes without a heartbeat answer. The
    // bound allows a loaded machine's late timers (the lease plus 2 s), still far from the 60 s cache TTL that a store
    // trusting a silent stream would serve the token for.
    while (O.isSome(await right(store.verifier.verify(token)))) {
      assert.ok(performance.now() - heldAt < leaseMs + 2000, `refused within the ${leaseMs} ms lease (+2 s)`);
      await sleep(5); // the polling interval
    }
    await eventually('a new invalidation connection is set up', () => store.cacheLive(), { everyMs: 1 });
    const fresh = await cachedToken(cli, direct, store);
    assert.ok(await right(cli.revoke(fresh)));
    await refusedSoon(store, fresh, 'invalidations reach the cache on the new connection');
  } finally {
    silent?.cut();
    await store.end();
  }
});

run();
