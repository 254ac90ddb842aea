import { hash } from 'node:crypto';
import * as E from 'fp-ts/lib/Either.js';
import { pipe } from 'fp-ts/lib/function.js';
import * as t from 'io-ts';
import { defaultServerLimits } from '../adapters/http/server.js';
import { isBearerToken, TOKEN_MAX } from '../domain/credentials.js';
import { isScope, type Scope } from '../domain/principal.js';
import { hasControlCharacter } from '../domain/text.js';
import { jsonParser, numberSource, REPEATED_MEMBER } from '../adapters/http/json.js';

/**
 * Every setting comes from the environment and is decoded here, once, at start-up. A bad value becomes one line
 * naming the variable, what is wrong and a good example; a secret's value is never repeated in that line.
 */

export type Env = Readonly<Record<string, string | undefined>>;

export interface StaticTokenEntry {
  readonly secret: { readonly token: string } | { readonly sha256: string };
  readonly owner: string;
  readonly subject: string;
  readonly scopes: readonly Scope[];
}

export interface Config {
  readonly port: number;
  readonly host: string | undefined;
  readonly logLevel: LogLevel;
  readonly bodyLimit: number;
  readonly serverLimits: ServerLimitsConfig;
  readonly shutdownTimeoutMs: number;
  readonly storage: MemoryConfig | MongoConfig;
  /** How many plants one owner may keep; 0: no bound. */
  readonly maxPlantsPerOwner: number;
  readonly auth: AuthConfig;
  readonly rateLimit: RateLimitConfig;
  /** Bound on a /readyz answer. */
  readonly readinessTimeoutMs: number;
  readonly logFormat: 'json' | 'pretty';
  /** A separate listener for /metrics; undefined: /metrics is served on PORT. */
  readonly metricsPort: number | undefined;
  /** Origins allowed by CORS; undefined: no CORS. */
  readonly corsOrigins: '*' | readonly string[] | undefined;
}

/** Limits of the HTTP server on connections, pipelining, headers and timeouts (see adapters/http/server.ts). */
export interface ServerLimitsConfig {
  readonly maxConnections: number;
  readonly maxPipelinedRequests: number;
  readonly maxHeaderSize: number;
  readonly headersTimeoutMs: number;
  readonly requestTimeoutMs: number;
  readonly keepAliveTimeoutMs: number;
  readonly idleTimeoutMs: number;
}

export type AuthConfig =
  | { readonly kind: 'static'; readonly tokens: readonly StaticTokenEntry[] | undefined }
  | { readonly kind: 'redis'; readonly url: string; readonly timeoutMs: number; readonly cacheTtlMs: number }
  | {
      readonly kind: 'jwt';
      readonly key:
        | { readonly kind: 'secret'; readonly secret: string }
        | { readonly kind: 'public-key'; readonly pem: string; readonly algorithm: 'RS256' | 'ES256' }
        | { readonly kind: 'jwks'; readonly url: string };
      readonly issuer?: string;
      readonly audience?: string;
      readonly ownerClaim: string;
      readonly clockToleranceSeconds: number;
      readonly timeoutMs: number;
    };

export interface RateLimitConfig {
  /** Requests per window per principal; 0 turns rate limiting off. */
  readonly max: number;
  readonly windowMs: number;
  readonly store: 'memory' | 'redis';
  readonly redisUrl: string;
  readonly timeoutMs: number;
}

export interface MemoryConfig {
  readonly kind: 'memory';
  /** The store's total bound (MEMORY_MAX_PLANTS); undefined: derived from the heap limit at start-up. */
  readonly maxPlants: number | undefined;
}

export interface MongoConfig {
  readonly kind: 'mongodb';
  readonly uri: string;
  readonly db: string;
  readonly timeoutMs: number;
  readonly writeConcern: 'majority' | number;
  readonly journal: boolean;
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
type LogLevel = (typeof LOG_LEVELS)[number];

/** One variable: how to read it, its default, a good example, and whether its value is secret. */
interface Variable<A> {
  readonly name: string;
  readonly read: (raw: string) => E.Either<string, A>;
  readonly fallback: A;
  readonly example: string;
  readonly secret?: boolean;
}

export class ConfigError extends Error {}

const get = <A>(env: Env, v: Variable<A>): A => {
  const raw = env[v.name];
  if (raw === undefined || raw === '') return v.fallback;
  return pipe(
    v.read(raw),
    E.getOrElseW((problem) => {
      const shown = v.secret ? '' : ` (got ${JSON.stringify(raw.length > 80 ? raw.slice(0, 80) + '…' : raw)})`;
      throw new ConfigError(`${v.name}: ${problem}${shown}; for example ${v.name}=${v.example}`);
    }),
  );
};

const integer = (min: number, max: number) => (raw: string) => {
  const n = Number(raw);
  return /^[0-9]+$/.test(raw) && Number.isSafeInteger(n) && n >= min && n <= max
    ? E.right(n)
    : E.left(`must be an integer from ${min} to ${max}`);
};

const oneOf =
  <T extends string>(values: readonly T[]) =>
  (raw: string): E.Either<string, T> =>
    (values as readonly string[]).includes(raw) ? E.right(raw as T) : E.left(`must be one of ${values.join(', ')}`);

const HostC = (raw: string) =>
  /^[A-Za-z0-9.:_-]{1,253}$/.test(raw) ? E.right(raw) : E.left('must be a host name or IP address');

const ScopeC = new t.Type<Scope, string, unknown>(
  'Scope',
  (u): u is Scope => typeof u === 'string' && isScope(u),
  (u, c) =>
    typeof u === 'string' && isScope(u)
      ? t.success(u)
      : t.failure(u, c, 'scopes must be plants:read and/or plants:write'),
  (s) => s,
);

const nonEmpty = (what: string, max: number) =>
  new t.Type<string, string, unknown>(
    what,
    (u): u is string => typeof u === 'string',
    (u, c) =>
      typeof u === 'string' && u.length >= 1 && u.length <= max && !hasControlCharacter(u)
        ? t.success(u)
        : t.failure(u, c, `${what} must be a string of 1 to ${max} characters`),
    (s) => s,
  );

const TokenSecret = new t.Type<string, string, unknown>(
  'token',
  (u): u is string => typeof u === 'string',
  (u, c) =>
    typeof u === 'string' && isBearerToken(u)
      ? t.success(u)
      : t.failure(u, c, `token must be an RFC 6750 b64token of at most ${TOKEN_MAX} characters`),
  (s) => s,
);

const Sha256Hex = new t.Type<string, string, unknown>(
  'sha256',
  (u): u is string => typeof u === 'string',
  (u, c) =>
    typeof u === 'string' && /^[0-9a-fA-F]{64}$/.test(u)
      ? t.success(u.toLowerCase())
      : t.failure(u, c, 'sha256 must be 64 hex digits'),
  (s) => s,
);

const EntryFields = t.type({
  owner: nonEmpty('owner', 256),
  subject: nonEmpty('subject', 256),
  scopes: t.array(ScopeC),
});
const PlainEntryC = t.intersection([t.type({ token: TokenSecret }), EntryFields]);
const HashedEntryC = t.intersection([t.type({ sha256: Sha256Hex }), EntryFields]);
const ENTRY_MEMBERS: readonly string[] = ['token', 'sha256', 'owner', 'subject', 'scopes'];
const ENTRY_SHAPE = 'must be an object with "token" or "sha256", and "owner", "subject", "scopes"';

/**
 * One entry: exactly one secret member picks its codec (so an error speaks of the member that is there), and any
 * member not in ENTRY_MEMBERS is refused: a misspelt member ("scope", "sha-256") would otherwise be ignored silently.
 */
const TokenEntryC = (item: unknown): E.Either<string, StaticTokenEntry> => {
  if (typeof item !== 'object' || item === null || Array.isArray(item)) return E.left(ENTRY_SHAPE);
  const unknownMember = Object.keys(item).find((key) => !ENTRY_MEMBERS.includes(key));
  if (unknownMember !== undefined) {
    return E.left(
      `unknown member ${JSON.stringify(unknownMember.slice(0, 40))} (allowed: ${ENTRY_MEMBERS.join(', ')})`,
    );
  }
  const hasToken = Object.hasOwn(item, 'token');
  const hasSha256 = Object.hasOwn(item, 'sha256');
  if (hasToken && hasSha256) return E.left('give either "token" or "sha256", not both');
  if (!hasToken && !hasSha256) return E.left(ENTRY_SHAPE);
  const decoded: E.Either<t.Errors, StaticTokenEntry> = hasToken
    ? E.map((e: t.TypeOf<typeof PlainEntryC>) => ({ ...fieldsOf(e), secret: { token: e.token } }))(
        PlainEntryC.decode(item),
      )
    : E.map((e: t.TypeOf<typeof HashedEntryC>) => ({ ...fieldsOf(e), secret: { sha256: e.sha256 } }))(
        HashedEntryC.decode(item),
      );
  return E.mapLeft((errors: t.Errors) => errors.map((e) => e.message).find((m) => m !== undefined) ?? ENTRY_SHAPE)(
    decoded,
  );
};

const fieldsOf = (e: t.TypeOf<typeof EntryFields>) => ({ owner: e.owner, subject: e.subject, scopes: e.scopes });

/** The SHA-256 (lower-case hex) that an entry's secret is known by, whichever way it was given. */
const secretHash = (entry: StaticTokenEntry): string =>
  'token' in entry.secret ? hash('sha256', entry.secret.token, 'hex') : entry.secret.sha256;

/** AUTH_TOKENS is parsed like a request body: duplicate members are refused, not silently resolved to the last. */
const parseTokensJson = jsonParser({ numbers: numberSource, limits: { maxDepth: 8, maxValues: 1_000_000 } });

/**
 * The static token set. Anything ambiguous stops start-up: a repeated member, an entry with both secrets, a
 * malformed sha256, an unknown member, or one secret listed twice (as two tokens, a token and its sha256, or two
 * sha256 values in any letter case), which would otherwise let the last entry silently decide the principal.
 */
const AuthTokensC = (raw: string): E.Either<string, readonly StaticTokenEntry[]> => {
  const parsed = parseTokensJson(Buffer.from(raw, 'utf8'));
  if (E.isLeft(parsed)) {
    // The parser's own messages may quote the text, which holds secrets: only the repeated member is named.
    return E.left(
      parsed.left.reason === REPEATED_MEMBER ? 'an entry repeats a member' : 'must be a JSON array of token entries',
    );
  }
  const json = parsed.right;
  if (!Array.isArray(json)) return E.left('must be a JSON array of token entries');
  const entries: StaticTokenEntry[] = [];
  const entryOfSecret = new Map<string, number>();
  for (const [i, item] of (json as unknown[]).entries()) {
    const decoded = TokenEntryC(item);
    if (E.isLeft(decoded)) return E.left(`entry ${i + 1}: ${decoded.left}`);
    const secret = secretHash(decoded.right);
    const earlier = entryOfSecret.get(secret);
    if (earlier !== undefined) {
      return E.left(`entries ${earlier + 1} and ${i + 1} have the same secret; list each secret once`);
    }
    entryOfSecret.set(secret, i);
    entries.push(decoded.right);
  }
  return E.right(entries);
};

const MongoUriC = (raw: string) =>
  /^mongodb(\+srv)?:\/\/[^\s]+$/.test(raw)
    ? E.right(raw)
    : E.left('must be a mongodb:// or mongodb+srv:// connection string');

const DbNameC = (raw: string) =>
  /^[A-Za-z0-9_-]{1,63}$/.test(raw) ? E.right(raw) : E.left('must be 1 to 63 letters, digits, "_" or "-"');

const WriteConcernC = (raw: string): E.Either<string, 'majority' | number> =>
  raw === 'majority'
    ? E.right('majority')
    : pipe(
        integer(1, 50)(raw),
        E.mapLeft(() => 'must be majority or a number of members from 1 to 50'),
      );

const RedisUrlC = (raw: string) =>
  /^rediss?:\/\/[^\s]*$/.test(raw) ? E.right(raw) : E.left('must be a redis:// or rediss:// URL');

const HttpsUrlC = (raw: string) => {
  try {
    const url = new URL(raw);
    return url.protocol === 'https:' || url.protocol === 'http:' ? E.right(raw) : E.left('must be an http(s) URL');
  } catch {
    return E.left('must be an http(s) URL');
  }
};

const JwtSecretC = (raw: string) =>
  raw.length >= 32 ? E.right(raw) : E.left('must be at least 32 characters (256 bits)');

/** A PEM public key; `\n` escapes are accepted so the key fits on one line of an env file. */
const PemC = (raw: string) => {
  const pem = raw.replace(/\\n/g, '\n');
  return /-----BEGIN PUBLIC KEY-----[\s\S]+-----END PUBLIC KEY-----/.test(pem)
    ? E.right(pem)
    : E.left('must be a PEM public key (-----BEGIN PUBLIC KEY----- ...)');
};

const ClaimC = (raw: string) =>
  /^[A-Za-z0-9_:.\/-]{1,100}$/.test(raw) ? E.right(raw) : E.left('must be a claim name');
const TextC = (raw: string) => (raw.length <= 1000 ? E.right(raw) : E.left('must be at most 1000 characters'));

/** `*`, or a comma-separated list of origins (`https://app.example`, `http://localhost:5173`), each kept as its origin. */
const CorsOriginsC = (raw: string): E.Either<string, '*' | readonly string[]> => {
  if (raw.trim() === '*') return E.right('*');
  const origins: string[] = [];
  for (const item of raw.split(',')) {
    const text = item.trim();
    let url: URL | undefined;
    try {
      url = new URL(text);
    } catch {
      url = undefined;
    }
    if (
      url === undefined ||
      (url.protocol !== 'http:' && url.protocol !== 'https:') ||
      url.username !== '' ||
      url.password !== '' ||
      url.pathname !== '/' ||
      url.search !== '' ||
      url.hash !== '' ||
      text.length > 300
    ) {
      return E.left('must be * or a comma-separated list of origins (scheme://host[:port], no path)');
    }
    origins.push(url.origin);
  }
  return E.right([...new Set(origins)]);
};

const BooleanC = (raw: string) =>
  raw === 'true' ? E.right(true) : raw === 'false' ? E.right(false) : E.left('must be true or false');

/** Every variable the service reads, with its default and an example; .env.example lists the same. */
export const variables = {
  PORT: { name: 'PORT', read: integer(0, 65535), fallback: 3000, example: '3000' },
  HOST: { name: 'HOST', read: HostC, fallback: undefined as string | undefined, example: '127.0.0.1' },
  LOG_LEVEL: { name: 'LOG_LEVEL', read: oneOf(LOG_LEVELS), fallback: 'info' as LogLevel, example: 'info' },
  BODY_LIMIT: { name: 'BODY_LIMIT', read: integer(64, 16 * 1024 * 1024), fallback: 16384, example: '16384' },
  MAX_CONNECTIONS: {
    name: 'MAX_CONNECTIONS',
    read: integer(1, 1_000_000),
    fallback: defaultServerLimits.maxConnections,
    example: '1000',
  },
  MAX_PIPELINED_REQUESTS: {
    name: 'MAX_PIPELINED_REQUESTS',
    read: integer(1, 1000),
    fallback: defaultServerLimits.maxPipelinedRequests,
    example: '16',
  },
  MAX_HEADER_SIZE: {
    name: 'MAX_HEADER_SIZE',
    read: integer(8192, 1024 * 1024),
    fallback: defaultServerLimits.maxHeaderSize,
    example: '16384',
  },
  HEADERS_TIMEOUT_MS: {
    name: 'HEADERS_TIMEOUT_MS',
    read: integer(100, 600_000),
    fallback: defaultServerLimits.headersTimeoutMs,
    example: '10000',
  },
  REQUEST_TIMEOUT_MS: {
    name: 'REQUEST_TIMEOUT_MS',
    read: integer(100, 3_600_000),
    fallback: defaultServerLimits.requestTimeoutMs,
    example: '30000',
  },
  KEEP_ALIVE_TIMEOUT_MS: {
    name: 'KEEP_ALIVE_TIMEOUT_MS',
    read: integer(100, 600_000),
    fallback: defaultServerLimits.keepAliveTimeoutMs,
    example: '5000',
  },
  IDLE_TIMEOUT_MS: {
    name: 'IDLE_TIMEOUT_MS',
    read: integer(1000, 3_600_000),
    fallback: defaultServerLimits.idleTimeoutMs,
    example: '60000',
  },
  SHUTDOWN_TIMEOUT_MS: { name: 'SHUTDOWN_TIMEOUT_MS', read: integer(0, 600_000), fallback: 10_000, example: '10000' },
  STORAGE: {
    name: 'STORAGE',
    read: oneOf(['memory', 'mongodb'] as const),
    fallback: 'memory' as 'memory' | 'mongodb',
    example: 'mongodb',
  },
  MONGODB_URI: {
    name: 'MONGODB_URI',
    read: MongoUriC,
    fallback: 'mongodb://127.0.0.1:27017',
    example: 'mongodb://127.0.0.1:27017',
    secret: true,
  },
  MONGODB_DB: { name: 'MONGODB_DB', read: DbNameC, fallback: 'plantstore', example: 'plantstore' },
  MONGODB_WRITE_CONCERN: {
    name: 'MONGODB_WRITE_CONCERN',
    read: WriteConcernC,
    fallback: 'majority' as 'majority' | number,
    example: 'majority',
  },
  MONGODB_JOURNAL: { name: 'MONGODB_JOURNAL', read: BooleanC, fallback: true, example: 'true' },
  STORAGE_TIMEOUT_MS: { name: 'STORAGE_TIMEOUT_MS', read: integer(50, 60_000), fallback: 2000, example: '2000' },
  MAX_PLANTS_PER_OWNER: {
    name: 'MAX_PLANTS_PER_OWNER',
    read: integer(0, 1_000_000_000),
    fallback: 10_000,
    example: '10000',
  },
  MEMORY_MAX_PLANTS: {
    name: 'MEMORY_MAX_PLANTS',
    read: integer(1, 1_000_000_000),
    fallback: undefined as number | undefined,
    example: '1000000',
  },
  AUTH: {
    name: 'AUTH',
    read: oneOf(['static', 'redis', 'jwt'] as const),
    fallback: 'static' as 'static' | 'redis' | 'jwt',
    example: 'redis',
  },
  AUTH_TIMEOUT_MS: { name: 'AUTH_TIMEOUT_MS', read: integer(50, 60_000), fallback: 2000, example: '2000' },
  REDIS_URL: {
    name: 'REDIS_URL',
    read: RedisUrlC,
    fallback: 'redis://127.0.0.1:6379',
    example: 'redis://127.0.0.1:6379',
    secret: true,
  },
  TOKEN_CACHE_TTL_MS: { name: 'TOKEN_CACHE_TTL_MS', read: integer(0, 3_600_000), fallback: 5000, example: '5000' },
  JWT_SECRET: {
    name: 'JWT_SECRET',
    read: JwtSecretC,
    fallback: undefined as string | undefined,
    example: '<32+ random characters>',
    secret: true,
  },
  JWT_PUBLIC_KEY: {
    name: 'JWT_PUBLIC_KEY',
    read: PemC,
    fallback: undefined as string | undefined,
    example: '"-----BEGIN PUBLIC KEY-----\\n...\\n-----END PUBLIC KEY-----"',
  },
  JWT_ALGORITHM: {
    name: 'JWT_ALGORITHM',
    read: oneOf(['RS256', 'ES256'] as const),
    fallback: 'RS256' as 'RS256' | 'ES256',
    example: 'ES256',
  },
  JWT_JWKS_URL: {
    name: 'JWT_JWKS_URL',
    read: HttpsUrlC,
    fallback: undefined as string | undefined,
    example: 'https://issuer.example/.well-known/jwks.json',
  },
  JWT_ISSUER: {
    name: 'JWT_ISSUER',
    read: TextC,
    fallback: undefined as string | undefined,
    example: 'https://issuer.example/',
  },
  JWT_AUDIENCE: {
    name: 'JWT_AUDIENCE',
    read: TextC,
    fallback: undefined as string | undefined,
    example: 'plant-store',
  },
  JWT_OWNER_CLAIM: { name: 'JWT_OWNER_CLAIM', read: ClaimC, fallback: 'owner', example: 'tenant' },
  JWT_CLOCK_TOLERANCE_S: { name: 'JWT_CLOCK_TOLERANCE_S', read: integer(0, 300), fallback: 5, example: '5' },
  READINESS_TIMEOUT_MS: { name: 'READINESS_TIMEOUT_MS', read: integer(10, 60_000), fallback: 500, example: '500' },
  LOG_FORMAT: {
    name: 'LOG_FORMAT',
    read: oneOf(['json', 'pretty'] as const),
    fallback: 'json' as 'json' | 'pretty',
    example: 'pretty',
  },
  METRICS_PORT: {
    name: 'METRICS_PORT',
    read: integer(0, 65535),
    fallback: undefined as number | undefined,
    example: '9464',
  },
  CORS_ORIGINS: {
    name: 'CORS_ORIGINS',
    read: CorsOriginsC,
    fallback: undefined as '*' | readonly string[] | undefined,
    example: 'https://app.example,http://localhost:5173',
  },
  RATE_LIMIT_MAX: { name: 'RATE_LIMIT_MAX', read: integer(0, 1_000_000_000), fallback: 0, example: '600' },
  RATE_LIMIT_WINDOW_MS: {
    name: 'RATE_LIMIT_WINDOW_MS',
    read: integer(100, 86_400_000),
    fallback: 60_000,
    example: '60000',
  },
  RATE_LIMIT_STORE: {
    name: 'RATE_LIMIT_STORE',
    read: oneOf(['memory', 'redis'] as const),
    fallback: 'memory' as 'memory' | 'redis',
    example: 'redis',
  },
  AUTH_TOKENS: {
    name: 'AUTH_TOKENS',
    read: AuthTokensC,
    fallback: undefined as readonly StaticTokenEntry[] | undefined,
    example: '\'[{"sha256":"<64 hex digits>","owner":"acme","subject":"ci","scopes":["plants:read","plants:write"]}]\'',
    secret: true,
  },
} satisfies Record<string, Variable<unknown>>;

/** Decodes the whole configuration, or throws ConfigError with the one line to print. */
export const loadConfig = (env: Env): Config => {
  const storageKind = get(env, variables.STORAGE);
  return {
    port: get(env, variables.PORT),
    host: get(env, variables.HOST),
    logLevel: get(env, variables.LOG_LEVEL),
    bodyLimit: get(env, variables.BODY_LIMIT),
    serverLimits: loadServerLimits(env),
    shutdownTimeoutMs: get(env, variables.SHUTDOWN_TIMEOUT_MS),
    storage:
      storageKind === 'memory'
        ? { kind: 'memory', maxPlants: get(env, variables.MEMORY_MAX_PLANTS) }
        : {
            kind: 'mongodb',
            uri: get(env, variables.MONGODB_URI),
            db: get(env, variables.MONGODB_DB),
            timeoutMs: get(env, variables.STORAGE_TIMEOUT_MS),
            writeConcern: get(env, variables.MONGODB_WRITE_CONCERN),
            journal: get(env, variables.MONGODB_JOURNAL),
          },
    maxPlantsPerOwner: get(env, variables.MAX_PLANTS_PER_OWNER),
    auth: loadAuth(env),
    rateLimit: {
      max: get(env, variables.RATE_LIMIT_MAX),
      windowMs: get(env, variables.RATE_LIMIT_WINDOW_MS),
      store: get(env, variables.RATE_LIMIT_STORE),
      redisUrl: get(env, variables.REDIS_URL),
      timeoutMs: get(env, variables.AUTH_TIMEOUT_MS),
    },
    readinessTimeoutMs: get(env, variables.READINESS_TIMEOUT_MS),
    logFormat: get(env, variables.LOG_FORMAT),
    metricsPort: get(env, variables.METRICS_PORT),
    corsOrigins: get(env, variables.CORS_ORIGINS),
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
    headersTimeoutMs,
    requestTimeoutMs,
    keepAliveTimeoutMs: get(env, variables.KEEP_ALIVE_TIMEOUT_MS),
    idleTimeoutMs: get(env, variables.IDLE_TIMEOUT_MS),
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
        url: get(env, variables.REDIS_URL),
        timeoutMs: get(env, variables.AUTH_TIMEOUT_MS),
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
        clockToleranceSeconds: get(env, variables.JWT_CLOCK_TOLERANCE_S),
        timeoutMs: get(env, variables.AUTH_TIMEOUT_MS),
      };
    }
  }
};
