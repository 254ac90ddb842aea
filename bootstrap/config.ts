/** Every setting, decoded from the environment at start-up; a bad value is one line (variable, problem, example). */
import type { ServerLimits } from '../adapters/http/server/server.js';
import type { RedisTarget } from '../adapters/redis/connection.js';
import type { JwtOptions } from '../adapters/tokens/jwt/jwt-token-verifier.js';
import { TimingError, timings } from '../adapters/storage/mongodb/quota.js';
import type { StaticTokenEntry } from './config/auth-tokens.js';
import { ConfigError, get, type Env, type Variable } from './config/readers.js';
import { variables } from './config/variables.js';

export { ConfigError, variables, type Env, type StaticTokenEntry };

/** The whole configuration, as loadConfig decodes it. */
export type Config = ReturnType<typeof loadConfig>;
/** OpenTelemetry tracing; undefined: off (no OTLP endpoint set, or OTEL_SDK_DISABLED=true). */
export type TracingConfig = NonNullable<Config['tracing']>;

/** The configured server limits; the stall and linger bounds are the server's own judgement (server-limits.ts). */
export type ServerLimitsConfig = Omit<ServerLimits, 'lingerMs' | 'lingerBytes' | 'unsentStallMs'>;

/** A Redis rate-limit call past this lets the request through: a slow limiter must not slow every request. */
export const RATE_LIMIT_TIMEOUT_MS = 500;
/** Clock skew allowed on a JWT's `exp` and `nbf`: synchronised clocks differ by far less. */
export const JWT_CLOCK_TOLERANCE_SECONDS = 5;

export type AuthConfig =
  | { readonly kind: 'static'; readonly tokens: readonly StaticTokenEntry[] | undefined }
  | {
      readonly kind: 'redis';
      readonly redis: RedisTarget;
      readonly timeoutMs: number;
      readonly cacheTtlMs: number;
      /** Replicas that must acknowledge a token write (issue, revoke) before it is reported done. */
      readonly waitReplicas: number;
    }
  | ({ readonly kind: 'jwt' } & Omit<JwtOptions, 'logger'>);

export interface MemoryConfig {
  readonly kind: 'memory';
  /** The store's total bound (MEMORY_MAX_PLANTS); undefined: derived from the heap limit at start-up. */
  readonly maxPlants: number | undefined;
}

/** Decodes the whole configuration, or throws ConfigError with the one line to print. */
export const loadConfig = (env: Env) => {
  // Every variable is decoded, also those of a backend not chosen (MONGODB_* with STORAGE=memory, JWT_* with
  // AUTH=static): a wrong value is a mistake either way, and says so before anything starts.
  for (const variable of Object.values(variables) as Array<Variable<unknown>>) get(env, variable);
  const storageKind = get(env, variables.STORAGE);
  const port = get(env, variables.PORT);
  const metricsPort = get(env, variables.METRICS_PORT);
  if (metricsPort !== undefined && metricsPort === port && port !== 0) {
    throw new ConfigError(
      `METRICS_PORT: must differ from PORT (${port}), since /metrics gets a listener of its own (got "${metricsPort}"); for example METRICS_PORT=${variables.METRICS_PORT.example}`,
    );
  }
  return {
    port,
    host: get(env, variables.HOST),
    logLevel: get(env, variables.LOG_LEVEL),
    bodyLimit: get(env, variables.BODY_LIMIT),
    serverLimits: loadServerLimits(env),
    shutdownTimeoutMs: get(env, variables.SHUTDOWN_TIMEOUT_MS),
    storage:
      storageKind === 'memory'
        ? { kind: storageKind, maxPlants: get(env, variables.MEMORY_MAX_PLANTS) }
        : {
            kind: storageKind,
            uri: get(env, variables.MONGODB_URI),
            db: get(env, variables.MONGODB_DB),
            timeoutMs: loadStorageTimeout(env),
            writeConcern: get(env, variables.MONGODB_WRITE_CONCERN),
            journal: get(env, variables.MONGODB_JOURNAL),
            slotCacheBytes: get(env, variables.MONGODB_SLOTS_MEMORY_BYTES),
          },
    maxPlantsPerOwner: get(env, variables.MAX_PLANTS_PER_OWNER),
    auth: loadAuth(env),
    rateLimit: {
      max: get(env, variables.RATE_LIMIT_MAX),
      windowMs: get(env, variables.RATE_LIMIT_WINDOW_MS),
      store: get(env, variables.RATE_LIMIT_STORE),
      redis: loadRedis(env),
      timeoutMs: RATE_LIMIT_TIMEOUT_MS,
    },
    logFormat: get(env, variables.LOG_FORMAT),
    metricsPort,
    corsOrigins: get(env, variables.CORS_ORIGINS),
    tracing: loadTracing(env),
  };
};

/** STORAGE_TIMEOUT_MS, within what the per-owner bound's proof allows on MongoDB (quota.ts, `timings`). */
const loadStorageTimeout = (env: Env): number => {
  const timeoutMs = get(env, variables.STORAGE_TIMEOUT_MS);
  try {
    timings(timeoutMs);
  } catch (e) {
    if (!(e instanceof TimingError)) throw e;
    throw new ConfigError(
      `STORAGE_TIMEOUT_MS: with STORAGE=mongodb ${e.message} (got "${timeoutMs}"); for example STORAGE_TIMEOUT_MS=${variables.STORAGE_TIMEOUT_MS.example}`,
    );
  }
  return timeoutMs;
};

/** As OpenTelemetry specifies: the traces endpoint is used as is, the general one gets `/v1/traces`. */
const loadTracing = (env: Env) => {
  const traces = get(env, variables.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
  const general = get(env, variables.OTEL_EXPORTER_OTLP_ENDPOINT);
  if (get(env, variables.OTEL_SDK_DISABLED) || (traces === undefined && general === undefined)) return undefined;
  return {
    url: traces ?? `${(general as string).replace(/\/+$/, '')}/v1/traces`,
    serviceName: get(env, variables.OTEL_SERVICE_NAME),
    sampler: get(env, variables.OTEL_TRACES_SAMPLER),
    ratio: get(env, variables.OTEL_TRACES_SAMPLER_ARG),
    maxQueueSize: get(env, variables.OTEL_BSP_MAX_QUEUE_SIZE),
  };
};

const loadServerLimits = (env: Env): ServerLimitsConfig => {
  const headersTimeoutMs = get(env, variables.HEADERS_TIMEOUT_MS);
  const requestTimeoutMs = get(env, variables.REQUEST_TIMEOUT_MS);
  if (headersTimeoutMs > requestTimeoutMs) {
    throw new ConfigError(
      `HEADERS_TIMEOUT_MS: must not exceed REQUEST_TIMEOUT_MS (${requestTimeoutMs}) (got "${headersTimeoutMs}"); for example HEADERS_TIMEOUT_MS=${variables.HEADERS_TIMEOUT_MS.example}`,
    );
  }
  return {
    maxConnections: get(env, variables.MAX_CONNECTIONS),
    maxPipelinedRequests: get(env, variables.MAX_PIPELINED_REQUESTS),
    maxHeaderSize: get(env, variables.MAX_HEADER_SIZE),
    maxHeaderFields: get(env, variables.MAX_HEADER_FIELDS),
    headersTimeoutMs,
    requestTimeoutMs,
    keepAliveTimeoutMs: get(env, variables.KEEP_ALIVE_TIMEOUT_MS),
    idleTimeoutMs: get(env, variables.IDLE_TIMEOUT_MS),
    maxUnsentBytes: get(env, variables.MAX_UNSENT_BYTES),
    maxBodyBytes: get(env, variables.MAX_BODY_BYTES),
  };
};

/** Whether the variable (or its `_FILE` form) is set. */
const given = (env: Env, name: string) => (env[name] ?? '') !== '' || (env[`${name}_FILE`] ?? '') !== '';

/** Where Redis is: one server (REDIS_URL) or a primary through Sentinel (REDIS_SENTINELS), never both. */
const loadRedis = (env: Env): RedisTarget => {
  const sentinels = get(env, variables.REDIS_SENTINELS);
  const sentinelExample = `for example REDIS_SENTINELS=${variables.REDIS_SENTINELS.example}`;
  if (sentinels === undefined) {
    for (const name of ['REDIS_SENTINEL_NAME', 'REDIS_SENTINEL_PASSWORD', 'REDIS_USERNAME', 'REDIS_PASSWORD']) {
      if (given(env, name)) {
        throw new ConfigError(
          `${name}: applies only with REDIS_SENTINELS (with REDIS_URL, the URL holds the credentials: redis://user:password@host:6379); ${sentinelExample}`,
        );
      }
    }
    return get(env, variables.REDIS_URL);
  }
  if (given(env, 'REDIS_URL')) {
    throw new ConfigError(
      `REDIS_URL: set REDIS_URL (one Redis) or REDIS_SENTINELS (a primary through Sentinel), not both; ${sentinelExample}`,
    );
  }
  const username = get(env, variables.REDIS_USERNAME);
  const password = get(env, variables.REDIS_PASSWORD);
  const sentinelPassword = get(env, variables.REDIS_SENTINEL_PASSWORD);
  return {
    kind: 'sentinel',
    sentinels,
    name: get(env, variables.REDIS_SENTINEL_NAME),
    ...(username === undefined ? {} : { username }),
    ...(password === undefined ? {} : { password }),
    ...(sentinelPassword === undefined ? {} : { sentinelPassword }),
    db: 0,
  };
};

const loadAuth = (env: Env): AuthConfig => {
  const kind = get(env, variables.AUTH);
  switch (kind) {
    case 'static':
      return { kind, tokens: get(env, variables.AUTH_TOKENS) };
    case 'redis':
      return {
        kind,
        redis: loadRedis(env),
        timeoutMs: get(env, variables.AUTH_TIMEOUT_MS),
        waitReplicas: get(env, variables.REDIS_WAIT_REPLICAS) ?? (given(env, 'REDIS_SENTINELS') ? 1 : 0),
        cacheTtlMs: get(env, variables.TOKEN_CACHE_TTL_MS),
      };
    case 'jwt': {
      const secret = get(env, variables.JWT_SECRET);
      const pem = get(env, variables.JWT_PUBLIC_KEY);
      const jwks = get(env, variables.JWT_JWKS_URL);
      const given = [secret, pem, jwks].filter((v) => v !== undefined).length;
      if (given !== 1) {
        throw new ConfigError(
          `JWT_SECRET: AUTH=jwt needs exactly one of JWT_SECRET, JWT_PUBLIC_KEY or JWT_JWKS_URL (${given} given); for example JWT_JWKS_URL=${variables.JWT_JWKS_URL.example}`,
        );
      }
      const issuer = get(env, variables.JWT_ISSUER);
      const audience = get(env, variables.JWT_AUDIENCE);
      return {
        kind,
        key:
          secret !== undefined
            ? { kind: 'secret', secret }
            : pem !== undefined
              ? { kind: 'public-key', pem, algorithm: get(env, variables.JWT_ALGORITHM) }
              : { kind: 'jwks', url: jwks as string },
        ...(issuer === undefined ? {} : { issuer }),
        ...(audience === undefined ? {} : { audience }),
        ownerClaim: get(env, variables.JWT_OWNER_CLAIM),
        clockToleranceSeconds: JWT_CLOCK_TOLERANCE_SECONDS,
        timeoutMs: get(env, variables.AUTH_TIMEOUT_MS),
      };
    }
  }
};
