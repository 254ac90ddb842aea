import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as O from 'fp-ts/lib/Option.js';
import type { Redis } from 'ioredis';
import * as assert from 'uvu/assert';
import { closeRedis, redisConnection, whenReady } from '../../adapters/redis/connection.js';
import { redisTokenStore, type RedisTokenStore } from '../../adapters/tokens/redis/redis-token-store.js';
import { freshOwner, right } from '../support/fixtures.js';
import { redisBinary, startRedis, type RunningServer } from '../../harness/servers.js';
import { suiteWith } from '../support/suites.js';

const binary = redisBinary();
const PASSWORD = 'restart-test-password';
const SCOPES = ['plants:read', 'plants:write'] as const;

/**
 * A Redis as compose.yaml runs it: append-only file, the default user off, the service's user by password (the ACL
 * file of scripts/compose-secrets.sh). Redis replays a MULTI/EXEC from that file under the default user's ACL and so
 * drops it (redis/redis#14541): what the store writes must survive a restart all the same.
 */
const { test, subject, run } = suiteWith(
  'AUTH=redis across a restart of a Redis with ACLs and an append-only file',
  'skip' in binary
    ? binary
    : async (): Promise<{
        server: RunningServer;
        connect: () => Promise<{ redis: Redis; store: RedisTokenStore }>;
        teardown: () => Promise<void>;
      }> => {
        const dir = mkdtempSync(join(tmpdir(), 'redis-acl-'));
        const aclFile = join(dir, 'users.acl');
        writeFileSync(
          aclFile,
          `user default off resetpass -@all\nuser plantstore on >${PASSWORD} resetkeys ~plantstore:* resetchannels &__redis__:invalidate -@all +@all -@dangerous +info\n`,
        );
        const server = await startRedis(binary.bin, ['--aclfile', aclFile]);
        const opened: Redis[] = [];
        return {
          server,
          connect: async () => {
            const redis = redisConnection(`redis://plantstore:${PASSWORD}@127.0.0.1:${server.port}`, 2000);
            opened.push(redis);
            if (!(await whenReady(redis, 5000))) throw new Error('redis did not become ready');
            return { redis, store: redisTokenStore(redis, { cacheTtlMs: 0 }) };
          },
          teardown: async () => {
            await Promise.all(opened.map((redis) => closeRedis(redis)));
            await server.dispose();
            rmSync(dir, { recursive: true, force: true });
          },
        };
      },
);

const valid = async (store: RedisTokenStore, token: string): Promise<boolean> =>
  O.isSome(await right(store.verifier.verify(token)));

test('issued tokens, with and without a lifetime, and their owner index are still there after a restart', async (ctx) => {
  const { server, connect } = subject(ctx);
  const before = await connect();
  const owner = freshOwner();
  const forever = await right(before.store.issue({ owner, subject: 'ci', scopes: [...SCOPES] }));
  const daily = await right(before.store.issue({ owner, subject: 'ops', scopes: [...SCOPES], ttlSeconds: 86_400 }));
  await closeRedis(before.redis);

  await server.stop();
  await server.start();
  const after = await connect();
  assert.ok(await valid(after.store, forever), 'the token without a lifetime is still valid');
  assert.ok(await valid(after.store, daily), 'the token with a lifetime is still valid');
  const listed = await right(after.store.list(owner));
  assert.equal(listed.map((info) => info.subject).sort(), ['ci', 'ops']);
  const ops = listed.find((info) => info.subject === 'ops');
  assert.ok(ops?.expiresAt !== undefined && ops.expiresAt > Date.now() + 86_000_000, 'its expiry is kept');
});

test('tokens revoked by owner and subject stay revoked after a restart', async (ctx) => {
  const { server, connect } = subject(ctx);
  const before = await connect();
  const owner = freshOwner();
  const revoked = await right(before.store.issue({ owner, subject: 'gone', scopes: [...SCOPES] }));
  const kept = await right(before.store.issue({ owner, subject: 'kept', scopes: [...SCOPES] }));
  assert.is(await right(before.store.revokeOwned(owner, 'gone')), 1);
  await closeRedis(before.redis);

  await server.stop();
  await server.start();
  const after = await connect();
  assert.not.ok(await valid(after.store, revoked), 'the revoked token is still refused');
  assert.ok(await valid(after.store, kept), 'the other subject is still valid');
  assert.equal(
    (await right(after.store.list(owner))).map((info) => info.subject),
    ['kept'],
  );
});

run();
