import { hash } from 'node:crypto';
import * as E from 'fp-ts/lib/Either.js';
import * as O from 'fp-ts/lib/Option.js';
import * as TE from 'fp-ts/lib/TaskEither.js';
import * as t from 'io-ts';
import type { Redis } from 'ioredis';
import { authUnavailable, type AuthUnavailable } from '../../../application/errors.js';
import type { Logger } from '../../../application/ports/logger.js';
import type { TokenVerifier } from '../../../application/ports/token-verifier.js';
import { Owner } from '../../../domain/plant.js';
import { isScope, type Principal, type Scope } from '../../../domain/principal.js';
import { listenForInvalidations } from './invalidations.js';
import { newToken } from './new-token.js';

/**
 * Opaque tokens in Redis (AUTH=redis). A token is kept only as its SHA-256: the key is `plantstore:token:<hex>`, a
 * hash of owner, subject, space-separated scopes, issued and expires (ms since the epoch; none: never), with the expiry
 * also as the key's TTL. Revoking deletes the key. A lookup that Redis cannot answer in time is AuthUnavailable, never
 * "unknown token".
 *
 * Every write is one command, never MULTI/EXEC nor a script (which Redis 7 replicates as MULTI/EXEC): replaying its
 * append-only file, Redis checks a transaction's commands against the default user's ACL and drops them where that user
 * is off, as compose's ACL has it (redis/redis#14541), so a token or a revocation would vanish at the next restart.
 * Hence the order of the writes, each safe if the next is lost: the owner's index before the token, the `expires` field
 * checked on every lookup before the key's TTL (which only collects it), the deletes before the index's cleanup.
 *
 * With the cache on, positive lookups are kept in process memory, and revocation still reaches every process at once:
 * Redis reports every change to a token key to every process (server-assisted client-side caching, see
 * invalidations.ts), which drops it from its cache. While that report stream is not known to be whole
 * (not yet set up, disconnected, silent), the cache is neither read nor filled, and it is emptied.
 */
export const KEY_PREFIX = 'plantstore:token:';
export const keyOf = (token: string): string => KEY_PREFIX + hash('sha256', token, 'hex');
/**
 * Each owner's tokens, by key: a set written before the token, so that listing or revoking an owner's tokens costs a
 * round trip or two and work in proportion to that owner's tokens, never a walk of the keyspace. A member whose token
 * has expired is dropped by the next list or revoke of that owner. Outside KEY_PREFIX: its changes invalidate nothing.
 */
export const ownerIndexOf = (owner: string): string => `plantstore:owner-tokens:${owner}`;

const StoredPrincipal = t.type({ owner: t.string, subject: t.string, scopes: t.string });

/** What a listing shows of a token: never its secret (nor its hash). Times in ms since the epoch. */
export interface TokenInfo {
  readonly owner: string;
  readonly subject: string;
  readonly scopes: readonly string[];
  readonly issuedAt: number | undefined;
  /** undefined: never expires. */
  readonly expiresAt: number | undefined;
}

/** The token's expiry (ms since the epoch), when it has one: the `expires` field of tokens issued with a TTL. */
const expiresOf = (record: Record<string, string>): number | undefined =>
  record['expires'] === undefined ? undefined : Number(record['expires']);

/** The principal of a stored token, or undefined when the record is not a valid, unexpired token. */
const decodeRecord = (record: Record<string, string>, now: number): Principal | undefined => {
  const raw = StoredPrincipal.decode(record);
  const expires = expiresOf(record);
  if (E.isLeft(raw) || (expires !== undefined && !(expires > now))) return undefined;
  const owner = Owner.from(raw.right.owner);
  const scopes = raw.right.scopes.split(' ').filter((s) => s !== '');
  if (E.isLeft(owner) || raw.right.subject === '' || !scopes.every(isScope)) return undefined;
  return { owner: owner.right, subject: raw.right.subject, scopes: new Set(scopes) };
};

const attempt =
  <A>(run: () => Promise<A>): TE.TaskEither<AuthUnavailable, A> =>
  async () => {
    try {
      return E.right(await run());
    } catch {
      // Connection refused, closed, command timeout, not writable: all mean the store did not answer.
      return E.left(authUnavailable);
    }
  };

export interface TokenGrant {
  readonly owner: string;
  readonly subject: string;
  readonly scopes: readonly Scope[];
  /** Seconds until the token expires; none when undefined. */
  readonly ttlSeconds?: number;
}

export interface RedisTokenStore {
  readonly verifier: TokenVerifier;
  /** Makes a new token (256 bits from the CSPRNG) for the grant and stores its hash; answers the token. */
  readonly issue: (grant: TokenGrant) => TE.TaskEither<AuthUnavailable, string>;
  /** Deletes the token; `true` when it existed. */
  readonly revoke: (token: string) => TE.TaskEither<AuthUnavailable, boolean>;
  /** The owner's live tokens (of one subject, when given): two round trips, in proportion to the owner's tokens. */
  readonly list: (owner: string, subject?: string) => TE.TaskEither<AuthUnavailable, readonly TokenInfo[]>;
  /** Deletes the owner's tokens (of one subject, when given), each reported to every process; answers how many. */
  readonly revokeOwned: (owner: string, subject?: string) => TE.TaskEither<AuthUnavailable, number>;
  /** Whether a lookup may be answered from the cache now (cache on, invalidation stream whole). */
  readonly cacheLive: () => boolean;
  /** Stops listening for invalidations (the Redis connection given is the caller's to close). */
  readonly close: () => Promise<void>;
}

export interface RedisTokenStoreOptions {
  /**
   * How long a positive lookup is served from process memory, in ms (0: never). A revocation or any other change of
   * the token's key drops it from every process's cache at once; an expiring token never outlives its own TTL.
   */
  readonly cacheTtlMs: number;
  /** Bound on cached tokens; the oldest entries go first. */
  readonly cacheMax?: number;
  /** How often the invalidation connection proves itself alive (default 250 ms). */
  readonly heartbeatMs?: number;
  /** How long after its last proof the invalidation stream is trusted (default 1000 ms). */
  readonly leaseMs?: number;
  readonly logger?: Logger;
}

export const redisTokenStore = (redis: Redis, options: RedisTokenStoreOptions): RedisTokenStore => {
  const cacheMax = options.cacheMax ?? 10_000;
  const cache = new Map<string, { principal: Principal; until: number }>();
  const invalidations =
    options.cacheTtlMs > 0
      ? listenForInvalidations(redis, {
          prefix: KEY_PREFIX,
          heartbeatMs: options.heartbeatMs ?? 250,
          leaseMs: options.leaseMs ?? 1000,
          ...(options.logger === undefined ? {} : { logger: options.logger }),
        })
      : undefined;
  invalidations?.onInvalidate((keys) => {
    if (keys === 'all') cache.clear();
    else for (const key of keys) cache.delete(key);
  });

  /**
   * Caches a lookup sent at `sentAt` whose PTTL answer was `pttl`: -1 no expiry, -2 no key, 0 expiring within this
   * millisecond, n > 0 milliseconds left. The entry ends no later than the token (counted from when the lookup was
   * sent, so the round trip cannot stretch it); a token in its last millisecond is not cached.
   */
  const remember = (key: string, principal: Principal, pttl: number, expires: number | undefined, sentAt: number) => {
    const ttl = pttl === -1 ? options.cacheTtlMs : pttl > 0 ? Math.min(options.cacheTtlMs, pttl) : 0;
    const until = Math.min(sentAt + ttl, expires ?? Infinity);
    if (until <= sentAt) return;
    if (cache.size >= cacheMax) cache.delete(cache.keys().next().value as string);
    cache.set(key, { principal, until });
  };

  /** The owner's live tokens (of `subject`, when given) with their keys; members of expired tokens are dropped. */
  const owned = async (owner: string, subject: string | undefined) => {
    const index = ownerIndexOf(owner);
    const keys = await redis.smembers(index);
    const tx = redis.multi();
    for (const key of keys) tx.hgetall(key).pttl(key);
    const replies = keys.length === 0 ? [] : ((await tx.exec()) ?? []);
    const found: Array<{ key: string; info: TokenInfo }> = [];
    const gone: string[] = [];
    const now = Date.now();
    keys.forEach((key, i) => {
      const [[recordErr, record] = [], [pttlErr, pttl] = []] = replies.slice(2 * i, 2 * i + 2);
      if (recordErr) throw recordErr;
      if (pttlErr) throw pttlErr;
      const stored = record as Record<string, string>;
      const principal = decodeRecord(stored, now);
      if (principal === undefined || principal.owner !== owner) return void gone.push(key);
      if (subject !== undefined && principal.subject !== subject) return;
      const issued = Number(stored['issued']);
      found.push({
        key,
        info: {
          owner,
          subject: principal.subject,
          scopes: [...principal.scopes],
          issuedAt: Number.isSafeInteger(issued) ? issued : undefined,
          expiresAt: expiresOf(stored) ?? (Number(pttl) > 0 ? now + Number(pttl) : undefined),
        },
      });
    });
    if (gone.length > 0) await redis.srem(index, ...gone);
    return found;
  };

  const verifier: TokenVerifier = {
    verify: (token) => {
      const key = keyOf(token);
      const live = invalidations?.live() ?? false;
      if (live) {
        const cached = cache.get(key);
        if (cached !== undefined) {
          if (cached.until > Date.now()) return TE.right(O.some(cached.principal));
          cache.delete(key);
        }
      } else if (cache.size > 0) {
        cache.clear();
      }
      // An answer may be cached only if no invalidation (of any key) arrived while it was on its way, and the
      // stream was whole before and after: else it may predate a revocation that was already reported.
      const version = invalidations?.version();
      return attempt(async () => {
        const sentAt = Date.now();
        const replies = await redis.multi().hgetall(key).pttl(key).exec();
        const [[recordErr, record] = [], [pttlErr, pttl] = []] = replies ?? [];
        if (recordErr) throw recordErr;
        if (pttlErr) throw pttlErr;
        const stored = (record ?? {}) as Record<string, string>;
        const principal = decodeRecord(stored, sentAt);
        if (principal === undefined) return O.none;
        if (live && invalidations?.live() === true && invalidations.version() === version) {
          remember(key, principal, Number(pttl), expiresOf(stored), sentAt);
        }
        return O.some(principal);
      });
    },
    ping: attempt(async () => {
      await redis.ping();
    }),
  };

  return {
    verifier,
    issue: (grant) =>
      attempt(async () => {
        const token = newToken();
        const key = keyOf(token);
        const issued = Date.now();
        const expires = grant.ttlSeconds === undefined ? undefined : issued + grant.ttlSeconds * 1000;
        await redis.sadd(ownerIndexOf(grant.owner), key);
        const { owner, subject } = grant;
        await redis.hset(key, {
          owner,
          subject,
          scopes: grant.scopes.join(' '),
          issued,
          ...(expires === undefined ? {} : { expires }),
        });
        if (expires !== undefined) await redis.pexpireat(key, expires);
        return token;
      }),
    revoke: (token) =>
      attempt(async () => {
        cache.delete(keyOf(token));
        return (await redis.del(keyOf(token))) === 1;
      }),
    list: (owner, subject) => attempt(async () => (await owned(owner, subject)).map(({ info }) => info)),
    revokeOwned: (owner, subject) =>
      attempt(async () => {
        const keys = (await owned(owner, subject)).map(({ key }) => key);
        if (keys.length === 0) return 0;
        for (const key of keys) cache.delete(key);
        const deleted = await redis.del(...keys);
        await redis.srem(ownerIndexOf(owner), ...keys);
        return deleted;
      }),
    cacheLive: () => invalidations?.live() ?? false,
    close: async () => {
      cache.clear();
      await invalidations?.close();
    },
  };
};
