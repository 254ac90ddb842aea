import { defaultServerLimits } from '../../adapters/http/server/server.js';
import type * as E from 'fp-ts/lib/Either.js';
import { readAuthTokens } from './auth-tokens.js';
import {
  readBoolean,
  readClaim,
  readCorsOrigins,
  readDbName,
  readHost,
  readHttpUrl,
  readInteger,
  readJwtSecret,
  readMongoUri,
  readOneOf,
  readOtelBoolean,
  readPem,
  readRatio,
  readRedisCredential,
  readRedisUrl,
  readSentinelName,
  readSentinels,
  readText,
  readWriteConcern,
  type Variable,
} from './readers.js';

/** The samplers OTEL_TRACES_SAMPLER names (the OpenTelemetry specification's, less the vendors' own). */
export const TRACES_SAMPLERS = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
] as const;
export type TracesSampler = (typeof TRACES_SAMPLERS)[number];

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** A variable as declared below: its name is its key there. */
type Declared<A> = Omit<Variable<A>, 'name'>;

/** Each declaration with its key as its name, so that a variable's name is written once. */
const named = <T extends Record<string, Declared<unknown>>>(declared: T): { [K in keyof T]: T[K] & { name: K } } =>
  Object.fromEntries(Object.entries(declared).map(([name, v]) => [name, { ...v, name }])) as {
    [K in keyof T]: T[K] & { name: K };
  };

const plain = <A>(read: (raw: string) => E.Either<string, A>, fallback: A, example: string): Declared<A> => ({
  read,
  fallback,
  example,
});
const int = (min: number, max: number, fallback: number, example: string): Declared<number> => ({
  read: readInteger(min, max),
  fallback,
  example,
});
const oneOf = <T extends string>(values: readonly T[], fallback: T, example: T): Declared<T> => ({
  read: readOneOf(values),
  fallback,
  example,
});
/** A variable without a default. */
const optional = <A>(read: (raw: string) => E.Either<string, A>, example: string): Declared<A | undefined> => ({
  read,
  fallback: undefined,
  example,
});
/** A variable whose value is never shown, and may come from `<NAME>_FILE`. */
const secret = <A>(v: Declared<A>): Declared<A> => ({ ...v, secret: true });

const limits = defaultServerLimits;

/** Every variable the service reads, with its default and an example; .env.example lists the same. */
export const variables = named({
  PORT: int(0, 65535, 3000, '3000'),
  HOST: optional(readHost, '127.0.0.1'),
  LOG_LEVEL: oneOf(LOG_LEVELS, 'info', 'info'),
  BODY_LIMIT: int(64, 16 * 1024 * 1024, 16384, '16384'),
  MAX_CONNECTIONS: int(1, 1_000_000, limits.maxConnections, '1000'),
  MAX_PIPELINED_REQUESTS: int(1, 1000, limits.maxPipelinedRequests, '16'),
  MAX_HEADER_SIZE: int(8192, 1024 * 1024, limits.maxHeaderSize, '16384'),
  MAX_HEADER_FIELDS: int(16, 2000, limits.maxHeaderFields, '100'),
  HEADERS_TIMEOUT_MS: int(100, 600_000, limits.headersTimeoutMs, '10000'),
  REQUEST_TIMEOUT_MS: int(100, 3_600_000, limits.requestTimeoutMs, '30000'),
  KEEP_ALIVE_TIMEOUT_MS: int(100, 600_000, limits.keepAliveTimeoutMs, '5000'),
  IDLE_TIMEOUT_MS: int(1000, 3_600_000, limits.idleTimeoutMs, '60000'),
  MAX_UNSENT_BYTES: int(1024 * 1024, 64 * 1024 * 1024 * 1024, limits.maxUnsentBytes, '67108864'),
  MAX_BODY_BYTES: int(16 * 1024 * 1024, 64 * 1024 * 1024 * 1024, limits.maxBodyBytes, '67108864'),
  SHUTDOWN_TIMEOUT_MS: int(0, 600_000, 10_000, '10000'),
  STORAGE: oneOf(['memory', 'mongodb'] as const, 'memory', 'mongodb'),
  MONGODB_URI: secret(plain(readMongoUri, 'mongodb://127.0.0.1:27017', 'mongodb://127.0.0.1:27017')),
  MONGODB_DB: plain(readDbName, 'plantstore', 'plantstore'),
  MONGODB_WRITE_CONCERN: plain(readWriteConcern, 'majority', 'majority'),
  MONGODB_JOURNAL: plain(readBoolean, true, 'true'),
  MONGODB_SLOTS_MEMORY_BYTES: int(0, 2 ** 40, 64 * 1024 * 1024, '67108864'),
  STORAGE_TIMEOUT_MS: int(50, 60_000, 2000, '2000'),
  // At most ten million: on MongoDB a process keeps a bit per slot of each owner it holds (1.25 MB at the most).
  MAX_PLANTS_PER_OWNER: int(0, 10_000_000, 10_000, '10000'),
  MEMORY_MAX_PLANTS: optional(readInteger(1, 1_000_000_000), '1000000'),
  AUTH: oneOf(['static', 'redis', 'jwt'] as const, 'static', 'redis'),
  AUTH_TIMEOUT_MS: int(50, 60_000, 2000, '2000'),
  REDIS_URL: secret(
    plain(
      readRedisUrl,
      { kind: 'server', host: '127.0.0.1', port: 6379, db: 0, tls: false } as const,
      'redis://127.0.0.1:6379',
    ),
  ),
  // Redis through Sentinel, instead of REDIS_URL: the primary is whichever server the sentinels name now.
  REDIS_SENTINELS: optional(readSentinels, '127.0.0.1:26379,127.0.0.1:26380,127.0.0.1:26381'),
  REDIS_SENTINEL_NAME: plain(readSentinelName, 'mymaster', 'mymaster'),
  REDIS_SENTINEL_PASSWORD: secret(optional(readRedisCredential, "<the sentinels' requirepass>")),
  REDIS_USERNAME: optional(readRedisCredential, 'plantstore'),
  REDIS_PASSWORD: secret(optional(readRedisCredential, "<the primary's password>")),
  // Replicas that must acknowledge each token write (WAIT); default: 1 with REDIS_SENTINELS, else 0.
  REDIS_WAIT_REPLICAS: optional(readInteger(0, 100), '1'),
  TOKEN_CACHE_TTL_MS: int(0, 3_600_000, 5000, '5000'),
  JWT_SECRET: secret(optional(readJwtSecret, '<32+ random characters>')),
  JWT_PUBLIC_KEY: optional(readPem, '"-----BEGIN PUBLIC KEY-----\\n...\\n-----END PUBLIC KEY-----"'),
  JWT_ALGORITHM: oneOf(['RS256', 'ES256'] as const, 'RS256', 'ES256'),
  JWT_JWKS_URL: optional(readHttpUrl, 'https://issuer.example/.well-known/jwks.json'),
  JWT_ISSUER: optional(readText, 'https://issuer.example/'),
  JWT_AUDIENCE: optional(readText, 'plant-store'),
  JWT_OWNER_CLAIM: plain(readClaim, 'owner', 'tenant'),
  LOG_FORMAT: oneOf(['json', 'pretty'] as const, 'json', 'pretty'),
  METRICS_PORT: optional(readInteger(0, 65535), '9464'),
  CORS_ORIGINS: optional(readCorsOrigins, 'https://app.example,http://localhost:5173'),
  RATE_LIMIT_MAX: int(0, 1_000_000_000, 0, '600'),
  RATE_LIMIT_WINDOW_MS: int(100, 86_400_000, 60_000, '60000'),
  RATE_LIMIT_STORE: oneOf(['memory', 'redis'] as const, 'memory', 'redis'),
  AUTH_TOKENS: secret(
    optional(
      readAuthTokens,
      '\'[{"sha256":"<64 hex digits>","owner":"acme","subject":"ci","scopes":["plants:read","plants:write"]}]\'',
    ),
  ),
  // OpenTelemetry's own names (its SDK environment specification): tracing is on when an endpoint is set.
  OTEL_SDK_DISABLED: plain(readOtelBoolean, false, 'true'),
  OTEL_EXPORTER_OTLP_ENDPOINT: optional(readHttpUrl, 'http://127.0.0.1:4318'),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: optional(readHttpUrl, 'http://127.0.0.1:4318/v1/traces'),
  OTEL_SERVICE_NAME: plain(readText, 'plant-store', 'plant-store'),
  OTEL_TRACES_SAMPLER: oneOf(TRACES_SAMPLERS, 'parentbased_always_on', 'parentbased_traceidratio'),
  OTEL_TRACES_SAMPLER_ARG: plain(readRatio, 1, '0.1'),
  OTEL_BSP_MAX_QUEUE_SIZE: int(1, 1_000_000, 2048, '2048'),
});
