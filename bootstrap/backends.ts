import { getHeapStatistics } from 'node:v8';
import * as E from 'fp-ts/lib/Either.js';
import type { Redis } from 'ioredis';
import type { Logger } from '../application/ports/logger.js';
import type { PlantRepository } from '../application/ports/plant-repository.js';
import type { RateLimiter } from '../application/ports/rate-limiter.js';
import type { TokenVerifier } from '../application/ports/token-verifier.js';
import { Owner } from '../domain/plant.js';
import { memoryRateLimiter } from '../adapters/rate-limit/memory/memory-rate-limiter.js';
import { redisRateLimiter } from '../adapters/rate-limit/redis/redis-rate-limiter.js';
import { closeRedis, connectedTo, redisConnection, whenReady, type RedisTarget } from '../adapters/redis/connection.js';
import { memoryCapacity } from '../adapters/storage/memory/capacity.js';
import { memoryPlantRepository } from '../adapters/storage/memory/memory-plant-repository.js';
import type { MongodbPlantRepository } from '../adapters/storage/mongodb/mongodb-plant-repository.js';
import { jwtTokenVerifier, type JwtOptions } from '../adapters/tokens/jwt/jwt-token-verifier.js';
import { redisTokenStore } from '../adapters/tokens/redis/redis-token-store.js';
import { sha256, staticTokenVerifier, type StaticToken } from '../adapters/tokens/static/static-token-verifier.js';
import { ConfigError, type Config, type MemoryConfig, type StaticTokenEntry } from './config.js';

/** The adapters the configuration chose, connected, and how to close them. */
export interface Backends {
  readonly plants: PlantRepository;
  readonly tokens: TokenVerifier;
  readonly limiter?: RateLimiter;
  /** The verifier guards the calls that reach its backend itself (AUTH=jwt: key fetches): its own are only timed. */
  readonly tokensGuarded: boolean;
  readonly close: () => Promise<void>;
}

const toStaticToken = (entry: StaticTokenEntry): StaticToken => {
  const owner = Owner.from(entry.owner);
  if (E.isLeft(owner)) throw new ConfigError(`AUTH_TOKENS: owner ${owner.left.rule}`);
  return {
    sha256: 'token' in entry.secret ? sha256(entry.secret.token) : Buffer.from(entry.secret.sha256, 'hex'),
    principal: { subject: entry.subject, owner: owner.right, scopes: new Set(entry.scopes) },
  };
};

/** The service never makes a token itself (it would land in the log): `npm start` makes one (scripts/launch.mjs). */
const staticTokens = (configured: readonly StaticTokenEntry[] | undefined): TokenVerifier => {
  if (configured === undefined || configured.length === 0) {
    throw new ConfigError(
      'AUTH_TOKENS: no token is configured; configure tokens one of three ways: AUTH_TOKENS (or AUTH_TOKENS_FILE) with a static set, AUTH=redis with REDIS_URL (tokens from npm run token), or AUTH=jwt with JWT_SECRET, JWT_PUBLIC_KEY or JWT_JWKS_URL; for example AUTH_TOKENS=\'[{"sha256":"<64 hex digits>","owner":"acme","subject":"ci","scopes":["plants:read","plants:write"]}]\'',
    );
  }
  return staticTokenVerifier(configured.map(toStaticToken));
};

/** The in-memory store's total bound: MEMORY_MAX_PLANTS, or what this process's heap limit holds at worst. */
export const memoryMaxPlants = (storage: MemoryConfig): number =>
  storage.maxPlants ?? memoryCapacity(getHeapStatistics().heap_size_limit);

/** Where the drivers' own error reports go (the reason logged when a backend fails); never a credential. */
export interface DriverHooks {
  readonly driverError?: (backend: 'storage' | 'token store' | 'rate limiter', reason: string) => void;
  /** The token store's breaker, for a verifier that reaches its backend on some calls only (JWKS key fetches). */
  readonly tokenStoreCalls?: JwtOptions['keyFetches'];
  /**
   * A backend's Redis connection is ready (it answered its ready check) on `address` (host:port; through Sentinel the
   * primary of the moment): the backend answers again, so failing fast may stop at once rather than at its next probe.
   */
  readonly redisReady?: (backend: 'token store' | 'rate limiter', address: string | undefined) => void;
}

/** Chooses and connects the adapters that the configuration names; the only place that choice is made. */
export const connectBackends = async (config: Config, logger: Logger, hooks: DriverHooks = {}): Promise<Backends> => {
  const closers: Array<() => Promise<void>> = [];
  /** Each connection's first wait before serving: its own bound. */
  const firstConnections: Array<Promise<boolean>> = [];
  /** A Redis connection of the backend's own: neither runs on the other's timeout, and errors name the right one. */
  const redisFor = (backend: 'token store' | 'rate limiter', target: RedisTarget, timeoutMs: number): Redis => {
    // ioredis reports every failed reconnect: kept as the reason of the next outage line (logged once, throttled).
    let lastError = 0;
    const redis = redisConnection(
      target,
      timeoutMs,
      (e) => {
        lastError = Date.now();
        hooks.driverError?.(backend, e.message);
      },
      `plant-store:${backend.replace(' ', '-')}`,
    );
    // A closed connection is the reason only when no error explains it (a server stopped, not a refused login).
    redis.on('close', () => {
      if (Date.now() - lastError > 1000) hooks.driverError?.(backend, 'the connection to Redis closed');
    });
    // Which server answers (through Sentinel: the primary of the moment), said whenever it changes.
    let primary: string | undefined;
    redis.on('ready', () => {
      const now = connectedTo(redis);
      hooks.redisReady?.(backend, now);
      if (now === primary) return;
      primary = now;
      logger.info({ backend, redis: now, sentinel: target.kind === 'sentinel' }, 'Redis connection ready');
    });
    firstConnections.push(whenReady(redis, timeoutMs));
    closers.push(() => closeRedis(redis));
    return redis;
  };

  const plants = await (async () => {
    const storage = config.storage;
    switch (storage.kind) {
      case 'memory':
        return memoryPlantRepository({ maxPlants: memoryMaxPlants(storage) });
      case 'mongodb': {
        // The driver is loaded only when configured: the default start does not pay for it.
        const { mongodbPlantRepository } = await import('../adapters/storage/mongodb/mongodb-plant-repository.js');
        let store: MongodbPlantRepository;
        try {
          store = mongodbPlantRepository({ ...storage, logger });
        } catch {
          // The driver's parse error may quote the URI, credentials included: say only what is wrong.
          throw new ConfigError(
            'MONGODB_URI (or the file MONGODB_URI_FILE names): is not a valid MongoDB connection string; for example MONGODB_URI=mongodb://127.0.0.1:27017',
          );
        }
        closers.push(store.close);
        store.client.on('serverHeartbeatFailed', (event) => hooks.driverError?.('storage', event.failure.message));
        // The driver's own reading of `hello`: no setName and not a mongos. Said once: it stays true for the run.
        let standalone = false;
        store.client.on('serverDescriptionChanged', ({ newDescription }) => {
          if (standalone || newDescription.type !== 'Standalone') return;
          standalone = true;
          logger.warn(
            { backend: 'storage' },
            'MongoDB is a standalone server, not a replica set: w: majority is this one server, no failover, and a lost disk loses acknowledged plants (docs/deployment.md)',
          );
        });
        return store.repository;
      }
    }
  })();

  const auth = config.auth;
  const tokens = await (async (): Promise<TokenVerifier> => {
    switch (auth.kind) {
      case 'static':
        return staticTokens(auth.tokens);
      case 'redis': {
        const store = redisTokenStore(redisFor('token store', auth.redis, auth.timeoutMs), {
          cacheTtlMs: auth.cacheTtlMs,
          logger,
        });
        closers.push(store.close);
        return store.verifier;
      }
      case 'jwt':
        try {
          return await jwtTokenVerifier({
            ...auth,
            keySourceFailed: (reason) => hooks.driverError?.('token store', reason),
            ...(hooks.tokenStoreCalls === undefined ? {} : { keyFetches: hooks.tokenStoreCalls }),
          });
        } catch {
          throw new ConfigError(
            'JWT_PUBLIC_KEY: is not a usable public key for JWT_ALGORITHM; for example a PEM SPKI key',
          );
        }
    }
  })();

  const { rateLimit } = config;
  const limiter =
    rateLimit.max === 0
      ? undefined
      : rateLimit.store === 'memory'
        ? memoryRateLimiter(rateLimit)
        : redisRateLimiter(redisFor('rate limiter', rateLimit.redis, rateLimit.timeoutMs), rateLimit);

  // Give Redis connections their first chance before serving; a Redis still down is reported by /readyz and 503s.
  await Promise.all(firstConnections);

  return {
    plants,
    tokens,
    ...(limiter === undefined ? {} : { limiter }),
    tokensGuarded: auth.kind === 'jwt',
    close: async () => {
      await Promise.allSettled(closers.map((close) => close()));
    },
  };
};
