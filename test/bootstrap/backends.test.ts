import * as E from 'fp-ts/lib/Either.js';
import * as O from 'fp-ts/lib/Option.js';
import { Redis } from 'ioredis';
import * as assert from 'uvu/assert';
import { connectBackends } from '../../bootstrap/backends.js';
import { loadConfig } from '../../bootstrap/config.js';
import { keyOf } from '../../adapters/tokens/redis/redis-token-store.js';
import { redisBinary, sharedRedis } from '../../harness/servers.js';
import type { Logger } from '../../application/ports/logger.js';
import { suiteWith } from '../support/suites.js';

const silentLogger: Logger = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
const redisBin = redisBinary();
const { test, subject, run } = suiteWith(
  'the backends the configuration chooses',
  'skip' in redisBin ? redisBin : async () => ({ redis: await sharedRedis(redisBin.bin) }),
);

/** The names of the connections Redis has open now. */
const connectionNames = async (uri: string): Promise<string[]> => {
  const admin = new Redis(uri);
  try {
    const list = String(await admin.client('LIST'));
    return [...list.matchAll(/ name=(\S*)/g)].map((m) => m[1] ?? '');
  } finally {
    admin.disconnect();
  }
};

test('the token store and the rate limiter each hold a Redis connection of their own', async (ctx) => {
  const { uri } = subject(ctx).redis;
  const config = loadConfig({
    AUTH: 'redis',
    REDIS_URL: uri,
    AUTH_TIMEOUT_MS: '3000',
    RATE_LIMIT_MAX: '100',
    RATE_LIMIT_STORE: 'redis',
  });
  const backends = await connectBackends(config, silentLogger);
  try {
    const names = await connectionNames(uri);
    assert.is(names.filter((n) => n === 'plant-store:token-store').length, 1, names.join(' '));
    assert.is(names.filter((n) => n === 'plant-store:rate-limiter').length, 1, names.join(' '));
  } finally {
    await backends.close();
  }
});

test('a REDIS_URL database the server does not have fails closed instead of using database 0', async (ctx) => {
  const { uri } = subject(ctx).redis;
  // A token in database 0, where ioredis would carry on after its SELECT was refused.
  const admin = new Redis(uri);
  const token = `db-check-${Date.now()}`;
  await admin.hset(keyOf(token), { owner: 'acme', subject: 'ops', scopes: 'plants:read' });
  const reasons: string[] = [];
  const config = loadConfig({ AUTH: 'redis', REDIS_URL: `${uri}/99`, AUTH_TIMEOUT_MS: '500' });
  const backends = await connectBackends(config, silentLogger, {
    driverError: (backend, reason) => reasons.push(`${backend}: ${reason}`),
  });
  try {
    const verified = await backends.tokens.verify(token)();
    assert.ok(
      E.isLeft(verified),
      `a lookup in the missing database is unavailable (503), got ${JSON.stringify(verified)}`,
    );
    assert.ok(E.isLeft(await backends.tokens.ping()), 'readiness reports the token store');
    assert.ok(
      reasons.some((r) => r.startsWith('token store: ') && r.includes('DB index')),
      `the outage reason names the database: ${reasons.join(' | ')}`,
    );
  } finally {
    await backends.close();
    await admin.del(keyOf(token));
    admin.disconnect();
  }
});

test('a REDIS_URL database the server has is the one used', async (ctx) => {
  const { uri } = subject(ctx).redis;
  const admin = new Redis(`${uri}/3`);
  const token = `db-check-${Date.now()}`;
  await admin.hset(keyOf(token), { owner: 'acme', subject: 'ops', scopes: 'plants:read' });
  const config = loadConfig({ AUTH: 'redis', REDIS_URL: `${uri}/3`, AUTH_TIMEOUT_MS: '2000' });
  const backends = await connectBackends(config, silentLogger);
  try {
    const verified = await backends.tokens.verify(token)();
    assert.ok(E.isRight(verified) && O.isSome(verified.right), JSON.stringify(verified));
  } finally {
    await backends.close();
    await admin.del(keyOf(token));
    admin.disconnect();
  }
});

run();
