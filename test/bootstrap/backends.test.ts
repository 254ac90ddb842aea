import { Redis } from 'ioredis';
import * as assert from 'uvu/assert';
import { connectBackends } from '../../bootstrap/backends.js';
import { loadConfig } from '../../bootstrap/config.js';
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
    RATE_LIMIT_TIMEOUT_MS: '300',
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

run();
