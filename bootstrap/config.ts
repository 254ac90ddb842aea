import * as E from 'fp-ts/lib/Either.js';
import { pipe } from 'fp-ts/lib/function.js';
import * as t from 'io-ts';
import { isScope, type Scope } from '../domain/principal.js';

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
  readonly shutdownTimeoutMs: number;
  readonly storage: { readonly kind: 'memory' } | MongoConfig;
  readonly auth: { readonly kind: 'static'; readonly tokens: readonly StaticTokenEntry[] | undefined };
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

const B64TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;

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
      typeof u === 'string' && u.length >= 1 && u.length <= max && !/[\u0000-\u001f\u007f]/.test(u)
        ? t.success(u)
        : t.failure(u, c, `${what} must be a string of 1 to ${max} characters`),
    (s) => s,
  );

const TokenSecret = new t.Type<string, string, unknown>(
  'token',
  (u): u is string => typeof u === 'string',
  (u, c) =>
    typeof u === 'string' && u.length <= 4096 && B64TOKEN.test(u)
      ? t.success(u)
      : t.failure(u, c, 'token must be an RFC 6750 b64token of at most 4096 characters'),
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
/** The entry's secret member picks its codec, so an error speaks of the member that is there. */
const TokenEntryC = (item: unknown) =>
  typeof item === 'object' && item !== null && 'sha256' in item && !('token' in item)
    ? HashedEntryC.decode(item)
    : PlainEntryC.decode(item);

const AuthTokensC = (raw: string): E.Either<string, readonly StaticTokenEntry[]> => {
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    return E.left('must be a JSON array of token entries');
  }
  if (!Array.isArray(json)) return E.left('must be a JSON array of token entries');
  const entries: StaticTokenEntry[] = [];
  for (const [i, item] of json.entries()) {
    const decoded = TokenEntryC(item);
    if (E.isLeft(decoded)) {
      const message = decoded.left.map((e) => e.message).find((m) => m !== undefined);
      return E.left(`entry ${i + 1}: ${message ?? 'needs "token" or "sha256", and "owner", "subject", "scopes"'}`);
    }
    const entry = decoded.right;
    entries.push({
      secret: 'token' in entry ? { token: entry.token } : { sha256: entry.sha256 },
      owner: entry.owner,
      subject: entry.subject,
      scopes: entry.scopes,
    });
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

const BooleanC = (raw: string) =>
  raw === 'true' ? E.right(true) : raw === 'false' ? E.right(false) : E.left('must be true or false');

/** Every variable the service reads, with its default and an example; .env.example lists the same. */
export const variables = {
  PORT: { name: 'PORT', read: integer(0, 65535), fallback: 3000, example: '3000' },
  HOST: { name: 'HOST', read: HostC, fallback: undefined as string | undefined, example: '127.0.0.1' },
  LOG_LEVEL: { name: 'LOG_LEVEL', read: oneOf(LOG_LEVELS), fallback: 'info' as LogLevel, example: 'info' },
  BODY_LIMIT: { name: 'BODY_LIMIT', read: integer(64, 16 * 1024 * 1024), fallback: 16384, example: '16384' },
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
  AUTH: { name: 'AUTH', read: oneOf(['static'] as const), fallback: 'static' as const, example: 'static' },
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
    shutdownTimeoutMs: get(env, variables.SHUTDOWN_TIMEOUT_MS),
    storage:
      storageKind === 'memory'
        ? { kind: 'memory' }
        : {
            kind: 'mongodb',
            uri: get(env, variables.MONGODB_URI),
            db: get(env, variables.MONGODB_DB),
            timeoutMs: get(env, variables.STORAGE_TIMEOUT_MS),
            writeConcern: get(env, variables.MONGODB_WRITE_CONCERN),
            journal: get(env, variables.MONGODB_JOURNAL),
          },
    auth: { kind: get(env, variables.AUTH), tokens: get(env, variables.AUTH_TOKENS) },
  };
};
