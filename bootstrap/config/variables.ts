/* eslint-disable @typescript-eslint/no-unnecessary-type-assertion -- each fallback's `as` widens a literal to its
   variable's type (`'info'` to LogLevel), which the declared type then carries; the rule takes them for no-ops. */
import { defaultServerLimits } from '../../adapters/http/server/server.js';
import { readAuthTokens, type StaticTokenEntry } from './auth-tokens.js';
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
  readRedisUrl,
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

/** Every variable the service reads, with its default and an example; .env.example lists the same. */
export const variables = named({
  PORT: { read: readInteger(0, 65535), fallback: 3000, example: '3000' },
  HOST: { read: readHost, fallback: undefined as string | undefined, example: '127.0.0.1' },
  LOG_LEVEL: { read: readOneOf(LOG_LEVELS), fallback: 'info' as LogLevel, example: 'info' },
  BODY_LIMIT: { read: readInteger(64, 16 * 1024 * 1024), fallback: 16384, example: '16384' },
  MAX_CONNECTIONS: {
    read: readInteger(1, 1_000_000),
    fallback: defaultServerLimits.maxConnections,
    example: '1000',
  },
  MAX_PIPELINED_REQUESTS: {
    read: readInteger(1, 1000),
    fallback: defaultServerLimits.maxPipelinedRequests,
    example: '16',
  },
  MAX_HEADER_SIZE: {
    read: readInteger(8192, 1024 * 1024),
    fallback: defaultServerLimits.maxHeaderSize,
    example: '16384',
  },
  HEADERS_TIMEOUT_MS: {
    read: readInteger(100, 600_000),
    fallback: defaultServerLimits.headersTimeoutMs,
    example: '10000',
  },
  REQUEST_TIMEOUT_MS: {
    read: readInteger(100, 3_600_000),
    fallback: defaultServerLimits.requestTimeoutMs,
    example: '30000',
  },
  KEEP_ALIVE_TIMEOUT_MS: {
    read: readInteger(100, 600_000),
    fallback: defaultServerLimits.keepAliveTimeoutMs,
    example: '5000',
  },
  IDLE_TIMEOUT_MS: {
    read: readInteger(1000, 3_600_000),
    fallback: defaultServerLimits.idleTimeoutMs,
    example: '60000',
  },
  MAX_UNSENT_BYTES: {
    read: readInteger(1024 * 1024, 64 * 1024 * 1024 * 1024),
    fallback: defaultServerLimits.maxUnsentBytes,
    example: '67108864',
  },
  MAX_BODY_BYTES: {
    read: readInteger(16 * 1024 * 1024, 64 * 1024 * 1024 * 1024),
    fallback: defaultServerLimits.maxBodyBytes,
    example: '67108864',
  },
  SHUTDOWN_TIMEOUT_MS: {
    read: readInteger(0, 600_000),
    fallback: 10_000,
    example: '10000',
  },
  STORAGE: {
    read: readOneOf(['memory', 'mongodb'] as const),
    fallback: 'memory' as 'memory' | 'mongodb',
    example: 'mongodb',
  },
  MONGODB_URI: {
    read: readMongoUri,
    fallback: 'mongodb://127.0.0.1:27017',
    example: 'mongodb://127.0.0.1:27017',
    secret: true,
  },
  MONGODB_DB: { read: readDbName, fallback: 'plantstore', example: 'plantstore' },
  MONGODB_WRITE_CONCERN: {
    read: readWriteConcern,
    fallback: 'majority' as 'majority' | number,
    example: 'majority',
  },
  MONGODB_JOURNAL: { read: readBoolean, fallback: true, example: 'true' },
  MONGODB_SLOTS_MEMORY_BYTES: {
    read: readInteger(0, 2 ** 40),
    fallback: 64 * 1024 * 1024,
    example: '67108864',
  },
  STORAGE_TIMEOUT_MS: { read: readInteger(50, 60_000), fallback: 2000, example: '2000' },
  MAX_PLANTS_PER_OWNER: {
    // At most ten million: on MongoDB a process keeps a bit per slot of each owner it holds (1.25 MB at the most).
    read: readInteger(0, 10_000_000),
    fallback: 10_000,
    example: '10000',
  },
  MEMORY_MAX_PLANTS: {
    read: readInteger(1, 1_000_000_000),
    fallback: undefined as number | undefined,
    example: '1000000',
  },
  AUTH: {
    read: readOneOf(['static', 'redis', 'jwt'] as const),
    fallback: 'static' as 'static' | 'redis' | 'jwt',
    example: 'redis',
  },
  AUTH_TIMEOUT_MS: { read: readInteger(50, 60_000), fallback: 2000, example: '2000' },
  REDIS_URL: {
    read: readRedisUrl,
    fallback: 'redis://127.0.0.1:6379',
    example: 'redis://127.0.0.1:6379',
    secret: true,
  },
  TOKEN_CACHE_TTL_MS: { read: readInteger(0, 3_600_000), fallback: 5000, example: '5000' },
  JWT_SECRET: {
    read: readJwtSecret,
    fallback: undefined as string | undefined,
    example: '<32+ random characters>',
    secret: true,
  },
  JWT_PUBLIC_KEY: {
    read: readPem,
    fallback: undefined as string | undefined,
    example: '"-----BEGIN PUBLIC KEY-----\\n...\\n-----END PUBLIC KEY-----"',
  },
  JWT_ALGORITHM: {
    read: readOneOf(['RS256', 'ES256'] as const),
    fallback: 'RS256' as 'RS256' | 'ES256',
    example: 'ES256',
  },
  JWT_JWKS_URL: {
    read: readHttpUrl,
    fallback: undefined as string | undefined,
    example: 'https://issuer.example/.well-known/jwks.json',
  },
  JWT_ISSUER: {
    read: readText,
    fallback: undefined as string | undefined,
    example: 'https://issuer.example/',
  },
  JWT_AUDIENCE: {
    read: readText,
    fallback: undefined as string | undefined,
    example: 'plant-store',
  },
  JWT_OWNER_CLAIM: { read: readClaim, fallback: 'owner', example: 'tenant' },
  LOG_FORMAT: {
    read: readOneOf(['json', 'pretty'] as const),
    fallback: 'json' as 'json' | 'pretty',
    example: 'pretty',
  },
  METRICS_PORT: {
    read: readInteger(0, 65535),
    fallback: undefined as number | undefined,
    example: '9464',
  },
  CORS_ORIGINS: {
    read: readCorsOrigins,
    fallback: undefined as '*' | readonly string[] | undefined,
    example: 'https://app.example,http://localhost:5173',
  },
  RATE_LIMIT_MAX: { read: readInteger(0, 1_000_000_000), fallback: 0, example: '600' },
  RATE_LIMIT_WINDOW_MS: {
    read: readInteger(100, 86_400_000),
    fallback: 60_000,
    example: '60000',
  },
  RATE_LIMIT_STORE: {
    read: readOneOf(['memory', 'redis'] as const),
    fallback: 'memory' as 'memory' | 'redis',
    example: 'redis',
  },
  AUTH_TOKENS: {
    read: readAuthTokens,
    fallback: undefined as readonly StaticTokenEntry[] | undefined,
    example: '\'[{"sha256":"<64 hex digits>","owner":"acme","subject":"ci","scopes":["plants:read","plants:write"]}]\'',
    secret: true,
  },
  // OpenTelemetry's own names (its SDK environment specification): tracing is on when an endpoint is set.
  OTEL_SDK_DISABLED: { read: readOtelBoolean, fallback: false, example: 'true' },
  OTEL_EXPORTER_OTLP_ENDPOINT: {
    read: readHttpUrl,
    fallback: undefined as string | undefined,
    example: 'http://127.0.0.1:4318',
  },
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: {
    read: readHttpUrl,
    fallback: undefined as string | undefined,
    example: 'http://127.0.0.1:4318/v1/traces',
  },
  OTEL_SERVICE_NAME: { read: readText, fallback: 'plant-store', example: 'plant-store' },
  OTEL_TRACES_SAMPLER: {
    read: readOneOf(TRACES_SAMPLERS),
    fallback: 'parentbased_always_on' as TracesSampler,
    example: 'parentbased_traceidratio',
  },
  OTEL_TRACES_SAMPLER_ARG: { read: readRatio, fallback: 1, example: '0.1' },
  OTEL_BSP_MAX_QUEUE_SIZE: {
    read: readInteger(1, 1_000_000),
    fallback: 2048,
    example: '2048',
  },
} satisfies Record<string, Declared<unknown>>);
