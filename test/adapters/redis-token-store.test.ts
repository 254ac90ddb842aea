import type { Redis } from 'ioredis';
import * as O from 'fp-ts/lib/Option.js';
import * as assert from 'uvu/assert';
import { redisConnection, whenReady } from '../../adapters/redis/connection.js';
import {
  KEY_PREFIX,
  keyOf,
  ownerIndexOf,
  redisTokenStore,
  type RedisTokenStore,
} from '../../adapters/tokens/redis/redis-token-store.js';
import { tokenVerifierContract } from '../contracts/token-verifier.contract.js';
import { freshOwner, principal, right } from '../support/fixtures.js';
import { redisBinary, sharedRedis } from '../../harness/servers.js';
import { suiteWith } from '../support/suites.js';
import { eventually, sleep } from '../support/wait.js';

const binary = redisBinary();

const connectTo = async (): Promise<Redis> => {
  if ('skip' in binary) throw new Error(binary.skip);
  const redis = redisConnection((await sharedRedis(binary.bin)).uri, 2000);
  if (!(await whenReady(redis, 5000))) throw new Error('redis did not become ready');
  return redis;
};

tokenVerifierContract(
  'redis',
  'skip' in binary
    ? binary
    : async () => {
        const redis = await connectTo();
        const store = redisTokenStore(redis, { cacheTtlMs: 0 });
        return {
          withPrincipals: async (principals) => {
            const tokens: string[] = [];
            for (const p of principals) {
              tokens.push(await right(store.issue({ owner: p.owner, subject: p.subject, scopes: [...p.scopes] })));
            }
            return { verifier: store.verifier, tokens };
          },
          teardown: async () => {
            redis.disconnect();
          },
        };
      },
);

const { test, subject, run } = suiteWith(
  'Redis token store',
  'skip' in binary
    ? binary
    : async () => {
        const redis = await connectTo();
        return { redis, teardown: async () => void redis.disconnect() };
      },
);
const redisOf = (ctx: Parameters<typeof subject>[0]): Redis => subject(ctx).redis;

test('a token is stored only as its SHA-256: neither key nor value holds the secret', async (ctx) => {
  const redis = redisOf(ctx);
  const store = redisTokenStore(redis, { cacheTtlMs: 0 });
  const token = await right(store.issue({ owner: freshOwner(), subject: 'ci', scopes: ['plants:read'] }));
  assert.ok(token.length >= 43, 'at least 256 bits, base64url');
  const key = keyOf(token);
  assert.match(key, new RegExp(`^${KEY_PREFIX}[0-9a-f]{64}$`));
  const keys = await redis.keys(`${KEY_PREFIX}*`);
  assert.ok(keys.includes(key));
  assert.not.ok(keys.some((k) => k.includes(token)));
  assert.not.ok(JSON.stringify(await redis.hgetall(key)).includes(token));
});

test('two issued tokens differ', async (ctx) => {
  const store = redisTokenStore(redisOf(ctx), { cacheTtlMs: 0 });
  const grant = { owner: freshOwner(), subject: 's', scopes: ['plants:read' as const] };
  assert.is.not(await right(store.issue(grant)), await right(store.issue(grant)));
});

test('a token with a TTL carries it as the key expiry, and is unknown once expired', async (ctx) => {
  const redis = redisOf(ctx);
  const store = redisTokenStore(redis, { cacheTtlMs: 0 });
  const token = await right(
    store.issue({ owner: freshOwner(), subject: 's', scopes: ['plants:read'], ttlSeconds: 600 }),
  );
  const ttl = await redis.ttl(keyOf(token));
  assert.ok(ttl > 590 && ttl <= 600, `ttl ${ttl}`);
  assert.ok(O.isSome(await right(store.verifier.verify(token))));
  await redis.pexpire(keyOf(token), 1);
  await eventually('Redis expires the key', async () => (await redis.exists(keyOf(token))) === 0, { everyMs: 2 });
  assert.equal(await right(store.verifier.verify(token)), O.none);
});

test("a token past its `expires` field is unknown even when its key outlives it (the key's TTL only collects it)", async (ctx) => {
  const redis = redisOf(ctx);
  const store = redisTokenStore(redis, { cacheTtlMs: 0 });
  const owner = freshOwner();
  const token = await right(store.issue({ owner, subject: 's', scopes: ['plants:read'], ttlSeconds: 600 }));
  // As if the PEXPIREAT after the HSET had been lost: the key lives on, its expires field says it is over.
  await redis.persist(keyOf(token));
  await redis.hset(keyOf(token), 'expires', Date.now() - 1);
  assert.equal(await right(store.verifier.verify(token)), O.none);
  assert.equal(await right(store.list(owner)), []);
});

test("an owner's expired and revoked tokens leave its index at its next listing: the index holds its live tokens", async (ctx) => {
  const redis = redisOf(ctx);
  const store = redisTokenStore(redis, { cacheTtlMs: 0 });
  const owner = freshOwner();
  const issue = (subject: string) => right(store.issue({ owner, subject, scopes: ['plants:read'], ttlSeconds: 600 }));
  const [expiring, revoked] = [await issue('a'), await issue('b'), await issue('c')];
  await redis.pexpire(keyOf(expiring), 1);
  await eventually('Redis expires the key', async () => (await redis.exists(keyOf(expiring))) === 0);
  assert.ok(await right(store.revoke(revoked)));
  assert.equal(
    (await right(store.list(owner))).map((t) => t.subject),
    ['c'],
  );
  assert.is(await redis.scard(ownerIndexOf(owner)), 1);
});

test('revoking deletes the token: unknown at the next lookup with the cache off', async (ctx) => {
  const store = redisTokenStore(redisOf(ctx), { cacheTtlMs: 0 });
  const token = await right(store.issue({ owner: freshOwner(), subject: 's', scopes: ['plants:write'] }));
  assert.ok(O.isSome(await right(store.verifier.verify(token))));
  assert.ok(await right(store.revoke(token)));
  assert.equal(await right(store.verifier.verify(token)), O.none);
  assert.not.ok(await right(store.revoke(token)), 'a second revoke finds nothing');
});

/** Waits (bounded) until the store's invalidation stream is set up, so that lookups are cached. */
const cacheLive = (store: RedisTokenStore) =>
  eventually('the invalidation stream is set up', () => store.cacheLive(), { everyMs: 5 });
/** How many HGETALLs Redis has run so far: a lookup served from the cache runs none. */
const lookups = async (redis: Redis) =>
  Number(/cmdstat_hgetall:calls=(\d+)/.exec(await redis.info('commandstats'))?.[1] ?? 0);

/**
 * Looks the token up until a lookup is served from the cache. (Issuing changes the token's key, and Redis reports
 * that change too: a lookup answered while that report is on its way is, rightly, not cached.)
 */
const servedFromCache = (redis: Redis, store: RedisTokenStore, token: string) =>
  eventually(
    'the token is served from the cache',
    async () => {
      const before = await lookups(redis);
      assert.ok(O.isSome(await right(store.verifier.verify(token))));
      return (await lookups(redis)) === before;
    },
    { everyMs: 2 },
  );

test('with the cache on, a revocation by another client (the CLI) is refused at once, not after the cache TTL', async (ctx) => {
  const redis = redisOf(ctx);
  const service = redisTokenStore(redis, { cacheTtlMs: 60_000 });
  const cli = redisTokenStore(redis, { cacheTtlMs: 0 });
  try {
    await cacheLive(service);
    const token = await right(cli.issue({ owner: freshOwner(), subject: 's', scopes: ['plants:read'] }));
    await servedFromCache(redis, service, token);

    const revokedAt = performance.now();
    assert.ok(await right(cli.revoke(token)));
    // Redis sends the invalidation before it answers the DEL, but on another connection: in this one process the
    // DEL's answer can be read first, so the test allows the invalidation its flight time: what it holds is the order,
    // refused while the cached entry is still live (before half its 60 s TTL), not a speed.
    while (O.isSome(await right(service.verifier.verify(token)))) {
      assert.ok(performance.now() - revokedAt < 30_000, 'refused while the cache entry is live (TTL 60 s)');
      await new Promise((r) => setImmediate(r));
    }
  } finally {
    await service.close();
  }
});

test('a token in its last millisecond is not cached: the cache never outlives the token', async (ctx) => {
  const redis = redisOf(ctx);
  const service = redisTokenStore(redis, { cacheTtlMs: 60_000 });
  const cli = redisTokenStore(redis, { cacheTtlMs: 0 });
  try {
    await cacheLive(service);
    let servedAfterExpiry = 0;
    for (let round = 0; round < 20; round++) {
      const token = await right(cli.issue({ owner: freshOwner(), subject: 's', scopes: ['plants:read'] }));
      const expiresAt = Date.now() + 15;
      await redis.pexpireat(keyOf(token), expiresAt);
      // Look it up in the very millisecond it expires, when Redis answers PTTL 0 ("expires now", not "no expiry").
      while (Date.now() < expiresAt);
      await right(service.verifier.verify(token));
      while (Date.now() <= expiresAt + 1) await new Promise((r) => setImmediate(r));
      if (O.isSome(await right(service.verifier.verify(token)))) servedAfterExpiry++;
    }
    assert.is(servedAfterExpiry, 0, `an expired token was served from the cache in ${servedAfterExpiry} of 20 rounds`);
  } finally {
    await service.close();
  }
});

test('a cached token is served no later than its own expiry', async (ctx) => {
  const redis = redisOf(ctx);
  const service = redisTokenStore(redis, { cacheTtlMs: 60_000 });
  const cli = redisTokenStore(redis, { cacheTtlMs: 0 });
  try {
    await cacheLive(service);
    // The token must be looked up (and cached) before it expires. On a loaded machine that lookup can come too late
    // for a short life: then the round is tried again with a life twice as long. A lookup that ended before the
    // expiry and found nothing still fails.
    for (let lifeMs = 150; ; lifeMs *= 2) {
      const token = await right(cli.issue({ owner: freshOwner(), subject: 's', scopes: ['plants:read'] }));
      const expiresAt = Date.now() + lifeMs;
      await redis.pexpireat(keyOf(token), expiresAt);
      const found = await right(service.verifier.verify(token));
      if (O.isNone(found) && Date.now() >= expiresAt && lifeMs < 10_000) continue; // too late to tell: again
      assert.ok(O.isSome(found), `cached, with ${lifeMs} ms left`);
      // Time is what is under test: the token's own expiry passes (a lower bound, it cannot come early).
      while (Date.now() <= expiresAt) await sleep(5);
      assert.equal(await right(service.verifier.verify(token)), O.none);
      break;
    }
  } finally {
    await service.close();
  }
});

test('a record that is not a valid principal resolves to nothing', async (ctx) => {
  const redis = redisOf(ctx);
  const store = redisTokenStore(redis, { cacheTtlMs: 0 });
  const token = 'hand-written-token';
  await redis.hset(keyOf(token), { owner: '', subject: 's', scopes: 'plants:read' });
  assert.equal(await right(store.verifier.verify(token)), O.none);
  await redis.hset(keyOf(token), { owner: 'o', subject: 's', scopes: 'plants:admin' });
  assert.equal(await right(store.verifier.verify(token)), O.none);
  await redis.del(keyOf(token));
});

test('a principal issued with both scopes keeps both', async (ctx) => {
  const store = redisTokenStore(redisOf(ctx), { cacheTtlMs: 0 });
  const p = principal();
  const token = await right(
    store.issue({ owner: p.owner, subject: p.subject, scopes: ['plants:read', 'plants:write'] }),
  );
  const found = await right(store.verifier.verify(token));
  assert.ok(O.isSome(found));
  assert.equal([...found.value.scopes].sort(), ['plants:read', 'plants:write']);
});

run();
