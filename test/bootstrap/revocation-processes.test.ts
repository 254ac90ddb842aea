import type { Redis } from 'ioredis';
import * as assert from 'uvu/assert';
import { closeRedis, redisConnection, whenReady } from '../../adapters/redis/connection.js';
import { INVALIDATION_CONNECTION_NAME } from '../../adapters/tokens/redis/invalidations.js';
import { keyOf } from '../../adapters/tokens/redis/redis-token-store.js';
import { runNode, type Started } from '../support/process.js';
import { redisBinary, startRedis, type RunningServer } from '../../harness/servers.js';
import { suiteWith } from '../support/suites.js';
import { eventually } from '../support/wait.js';

/**
 * Revocation is immediate on every process, with the token cache on at a long TTL: two real service processes
 * (`node dist/bootstrap/main.js`, AUTH=redis, TOKEN_CACHE_TTL_MS=60000) serve a token from their caches; the token
 * CLI revokes it; the next request on each process is a 401. No sleeping: Redis sends each process its invalidation
 * before it answers the CLI's DEL, and the CLI must answer and exit before the test sends the next requests.
 */
const binary = redisBinary();
const CACHE_TTL_MS = '60000';

interface Subject {
  readonly redis: RunningServer;
  readonly admin: Redis;
  readonly services: readonly { readonly base: string; readonly process: Started }[];
  readonly teardown: () => Promise<void>;
}

/** How many HGETALLs Redis has run so far: a request served from a process's cache runs none. */
const lookups = async (admin: Redis) =>
  Number(/cmdstat_hgetall:calls=(\d+)/.exec(await admin.info('commandstats'))?.[1] ?? 0);

const { test, subject, run } = suiteWith<Subject>(
  'revocation with the token cache on, across two service processes',
  'skip' in binary
    ? binary
    : async () => {
        // A Redis of its own: the test counts the invalidation connections and kills them.
        const redis = await startRedis(binary.bin);
        const admin = redisConnection(redis.uri, 2000);
        await whenReady(admin, 5000);
        const env = {
          PORT: '0',
          HOST: '127.0.0.1',
          AUTH: 'redis',
          REDIS_URL: redis.uri,
          TOKEN_CACHE_TTL_MS: CACHE_TTL_MS,
        };
        const started = [runNode('bootstrap/main.js', env), runNode('bootstrap/main.js', env)];
        const services = await Promise.all(
          started.map(async (p) => {
            await p.waitFor(/"msg":"listening"/);
            return { base: `http://127.0.0.1:${/"port":(\d+)/.exec(p.stdout())?.[1]}`, process: p };
          }),
        );
        return {
          redis,
          admin,
          services,
          teardown: async () => {
            for (const p of started) p.child.kill('SIGTERM');
            await Promise.all(started.map((p) => p.exited));
            await closeRedis(admin);
            await redis.dispose();
          },
        };
      },
);

const cli = async (uri: string, args: string[]) => {
  const run = runNode('bootstrap/token-cli.js', { AUTH: 'redis', REDIS_URL: uri }, args);
  const code = await run.exited;
  return { code, stdout: run.stdout(), stderr: run.stderr() };
};

const issue = async (uri: string) => {
  const issued = await cli(uri, ['issue', '--owner', 'acme', '--subject', 'ci', '--scopes', 'plants:read']);
  assert.is(issued.code, 0, issued.stderr);
  return issued.stdout.trimEnd().split('\n').pop() as string;
};

const get = (base: string, token: string) =>
  fetch(`${base}/plants`, { headers: { authorization: `Bearer ${token}` } }).then(async (res) => {
    await res.arrayBuffer();
    return res;
  });

/** Both processes have their invalidation connection subscribed, with tracking on. */
const bothListening = async (admin: Redis) => {
  let seen = 0;
  await eventually(
    'two invalidation connections',
    async () => {
      const clients = String(await admin.client('LIST'))
        .split('\n')
        .filter((l) => l.includes(`name=${INVALIDATION_CONNECTION_NAME}`) && / sub=1 /.test(l) && /flags=\S*t/.test(l));
      seen = clients.length;
      return seen === 2;
    },
    { everyMs: 20, detail: () => `${seen} seen` },
  );
};

/** Requests with the token on every process until each is answered from its cache (Redis runs no lookup for it). */
const warm = async (admin: Redis, services: Subject['services'], token: string) => {
  for (const { base } of services) {
    for (let attempt = 0; ; attempt++) {
      assert.ok(attempt < 50, `${base} never answered from its cache`);
      const before = await lookups(admin);
      assert.is((await get(base, token)).status, 200);
      if ((await lookups(admin)) === before) break;
    }
  }
};

test('the CLI revokes a token both processes serve from their caches: the next request on each is 401', async (ctx) => {
  const { redis, admin, services } = subject(ctx);
  await bothListening(admin);
  const token = await issue(redis.uri);
  await warm(admin, services, token);

  const revoked = await cli(redis.uri, ['revoke', token]);
  assert.is(revoked.code, 0, revoked.stderr);
  for (const { base } of services) {
    const res = await get(base, token);
    assert.is(res.status, 401, `${base}: the next request after the revocation`);
    assert.is(res.headers.get('www-authenticate'), 'Bearer realm="plants", error="invalid_token"');
  }
});

test('the invalidation connections killed together with a revocation (one MULTI): each process stops trusting its cache within the lease', async (ctx) => {
  const { redis, admin, services } = subject(ctx);
  await bothListening(admin);
  const token = await issue(redis.uri);
  await warm(admin, services, token);

  // Atomically: the invalidation connections go first, then the token, so no invalidation of it can reach them.
  const replies = await admin.multi().client('KILL', 'TYPE', 'pubsub').del(keyOf(token)).exec();
  assert.equal(
    replies?.map(([, r]) => r),
    [2, 1],
    'both invalidation connections killed, the token deleted',
  );
  // No invalidation can arrive now. A process learns that its stream is gone from the connection's close, which may
  // be read after a request already waiting on another socket; at the latest the stream's lease (1 s without a PING
  // answer) runs out. So each process refuses the token within the lease, never by the cache TTL (60 s here). The
  // time is the contract; the bound asserted is the lease with room for a loaded machine (5 s), still far from the
  // TTL that a process trusting its cache would serve the token for.
  for (const { base } of services) {
    let status = 0;
    await eventually(
      `${base}: refused within the lease, with no invalidation received`,
      async () => (status = (await get(base, token)).status) !== 200,
      { timeoutMs: 5000 },
    );
    assert.is(status, 401, `${base}: refused within the lease, with no invalidation received`);
  }
  await bothListening(admin); // they come back by themselves
});

run();
