import * as assert from 'uvu/assert';
import { closeRedis, redisConnection, whenReady } from '../../adapters/redis/connection.js';
import { redisTokenStore, type RedisTokenStore } from '../../adapters/tokens/redis/redis-token-store.js';
import { freshOwner, right } from '../support/fixtures.js';
import { startService, type Service } from '../support/http.js';
import { redisBinary, startRedis, type RunningServer } from '../../harness/servers.js';
import { suiteWith } from '../support/suites.js';
import { eventually } from '../support/wait.js';

const TIMEOUT_MS = 2000;
const binary = redisBinary();

/** A redis-server of its own (this suite stops and starts it), the token store on it, and the service over that. */
const { test, subject, run } = suiteWith(
  'AUTH=redis when Redis goes away',
  'skip' in binary
    ? binary
    : async (): Promise<{
        server: RunningServer;
        store: RedisTokenStore;
        svc: Service;
        teardown: () => Promise<void>;
      }> => {
        const server = await startRedis(binary.bin);
        const redis = redisConnection(server.uri, TIMEOUT_MS);
        await whenReady(redis, 5000);
        const store = redisTokenStore(redis, { cacheTtlMs: 0 });
        const svc = await startService({ tokens: store.verifier });
        return {
          server,
          store,
          svc,
          teardown: async () => {
            await svc.close();
            await closeRedis(redis);
            await server.dispose();
          },
        };
      },
);

test('Redis down: a good token gets 503 within the bound (never 401), /readyz 503; back up: served again', async (ctx) => {
  const { svc, server, store } = subject(ctx);
  const token = await right(
    store.issue({ owner: freshOwner(), subject: 'ci', scopes: ['plants:read', 'plants:write'] }),
  );
  assert.is((await svc.call('GET', '/plants', { token })).status, 200);

  await server.stop(true);
  for (const [method, path] of [
    ['GET', '/plants'],
    ['DELETE', '/plants/1'],
  ] as const) {
    const res = await svc.call(method, path, { token });
    assert.is(res.status, 503, `${method} ${path}`);
    assert.is(res.headers.get('retry-after'), '1');
    assert.is((res.json() as { message: string }).message, 'authentication is unavailable, retry later');
  }
  const ready = await svc.call('GET', '/readyz');
  assert.is(ready.status, 503);
  assert.is((ready.json() as { message: string }).message, 'not ready: token store does not answer');
  assert.is(
    (await svc.call('GET', '/plants', { token: 'unknown' })).status,
    503,
    'an unknown token is not called unknown either',
  );

  await server.start();
  await eventually('ready again', async () => (await svc.call('GET', '/readyz')).status === 200, {
    timeoutMs: 20_000,
    everyMs: 50,
  });
  assert.is((await svc.call('GET', '/plants', { token })).status, 200, 'the token survived and works again');
});

test('a revoked token is refused at the next request (cache off)', async (ctx) => {
  const { svc, store } = subject(ctx);
  const token = await right(store.issue({ owner: freshOwner(), subject: 'ci', scopes: ['plants:read'] }));
  assert.is((await svc.call('GET', '/plants', { token })).status, 200);
  assert.ok(await right(store.revoke(token)));
  const res = await svc.call('GET', '/plants', { token });
  assert.is(res.status, 401);
  assert.is(res.headers.get('www-authenticate'), 'Bearer realm="plants", error="invalid_token"');
});

run();
