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
 * Waits, at most `timeoutMs`, until the writes this connection made so far are on `replicas` replicas (Redis's WAIT);
 * answers how many acknowledged them. With `replicas` 0 it answers 0 at once, sending nothing.
 */
const replicated = async (redis: Redis, replicas: number, timeoutMs: number): Promise<number> =>
  replicas === 0 ? 0 : Number(await redis.wait(replicas, timeoutMs));

/**
 * Opaque tokens in Redis (AUTH=redis), kept only as their SHA-256: `plantstore:token:<hex>` is a hash of owner,
 * subject, scopes, issued and expires (ms; none: never), the expiry also its TTL. A lookup Redis does not answer in
 * time is AuthUnavailable, never "unknown token".
 *
 * Every write is one command, never MULTI/EXEC nor a script: replaying its append-only file, Redis drops a
 * transaction's commands where the default user is off, as compose's ACL has it (redis/redis#14541). Hence the order
 * of the writes, each safe if the next is lost: the owner's index before the token, the `expires` field checked on
 * every lookup (the TTL only collects it), the deletes before the index's cleanup.
 *
 * With `replicas` set (Redis through Sentinel), `issue`, `revoke` and `revokeOwned` answer only once that many
 * replicas hold their writes (WAIT, bounded): what they answered survives the primary's loss. Else they are
 * Unreplicated: an issued token is withdrawn (never handed out), a revocation stands on the primary only.
 *
 * Cached lookups are dropped in every process when Redis reports a change to their key (invalidations.ts); while that
 * stream is not known to be whole, the cache is emptied and neither read nor filled.
 */
export const KEY_PREFIX = 'plantstore:token:';
export const keyOf = (token: string): string => KEY_PREFIX + hash('sha256', token, 'hex');
/** Each owner's token keys, so a list or revoke costs that owner's tokens, never a keyspace walk (not invalidated). */
export const ownerIndexOf = (owner: string): string => `plantstore:owner-tokens:${owner}`;

/** Bound on cached tokens; the oldest go first. */
const CACHE_MAX = 10_000;

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

/** The HGETALL and PTTL replies of the `i`th key of a MULTI, or the error of either. */
const recordAndTtl = (replies: [Error | null, unknown][], i: number): [Record<string, string>, number] => {
  const [[recordErr, record] = [], [pttlErr, pttl] = []] = replies.slice(2 * i, 2 * i + 2);
  if (recordErr) throw recordErr;
  if (pttlErr) throw pttlErr;
  return [(record ?? {}) as Record<string, string>, Number(pttl)];
};

const attempt =
  <A>(run: () => Promise<A>): TE.TaskEither<AuthUnavailable | Unreplicated, A> =>
  async () => {
    try {
      return E.right(await run());
    } catch (e) {
      if (e instanceof NotReplicated) return E.left({ _tag: 'Unreplicated', acknowledged: e.acknowledged });
      // Connection refused, closed, command timeout, not writable: all mean the store did not answer.
      return E.left(authUnavailable);
    }
  };

/** A read's failure is only ever AuthUnavailable: it writes nothing to replicate. */
const reading = <A>(run: () => Promise<A>): TE.TaskEither<AuthUnavailable, A> =>
  TE.mapLeft(() => authUnavailable)(attempt(run));

/** The writes were made on the primary, but fewer replicas than required acknowledged them in time. */
export interface Unreplicated {
  readonly _tag: 'Unreplicated';
  readonly acknowledged: number;
}

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
  readonly issue: (grant: TokenGrant) => TE.TaskEither<AuthUnavailable | Unreplicated, string>;
  /** Deletes the token; `true` when it existed. */
  readonly revoke: (token: string) => TE.TaskEither<AuthUnavailable | Unreplicated, boolean>;
  /** The owner's live tokens (of one subject, when given): two round trips, in proportion to the owner's tokens. */
  readonly list: (owner: string, subject?: string) => TE.TaskEither<AuthUnavailable, readonly TokenInfo[]>;
  /** Deletes the owner's tokens (of one subject, when given), each reported to every process; answers how many. */
  readonly revokeOwned: (owner: string, subject?: string) => TE.TaskEither<AuthUnavailable | Unreplicated, number>;
  /** Whether a lookup may be answered from the cache now (cache on, invalidation stream whole). */
  readonly cacheLive: () => boolean;
  /** Stops listening for invalidations (the Redis connection given is the caller's to close). */
  readonly close: () => Promise<void>;
}

export interface RedisTokenStoreOptions {
  /** How long a positive lookup is served from process memory, in ms (0: never); never past the token's own TTL. */
  readonly cacheTtlMs: number;
  readonly logger?: Logger;
  /** Replicas that must acknowledge each write, and how long to wait for them (ms); none: the primary's answer. */
  readonly replicas?: { readonly count: number; readonly timeoutMs: number };
}

class NotReplicated extends Error {
  constructor(readonly acknowledged: number) {
    super('not replicated');
  }
}

export const redisTokenStore = (redis: Redis, options: RedisTokenStoreOptions): RedisTokenStore => {
  const cache = new Map<string, { principal: Principal; until: number }>();
  const invalidations =
    options.cacheTtlMs > 0
      ? listenForInvalidations(redis, {
          prefix: KEY_PREFIX,
          // The invalidation connection proves itself alive every 250 ms, and is trusted for 1 s after its last proof.
          heartbeatMs: 250,
          leaseMs: 1000,
          tell: (keys) => {
            if (keys === 'all') cache.clear();
            else for (const key of keys) cache.delete(key);
          },
          ...(options.logger === undefined ? {} : { logger: options.logger }),
        })
      : undefined;

  /** Caches a lookup no longer than its TTL (`pttl`: -1 none, -2 no key, 0 now, n ms), counted from `sentAt`. */
  const remember = (key: string, principal: Principal, pttl: number, expires: number | undefined, sentAt: number) => {
    const ttl = pttl === -1 ? options.cacheTtlMs : pttl > 0 ? Math.min(options.cacheTtlMs, pttl) : 0;
    const until = Math.min(sentAt + ttl, expires ?? Infinity);
    if (until <= sentAt) return;
    if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value as string);
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
      const [stored, pttl] = recordAndTtl(replies, i);
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
          expiresAt: expiresOf(stored) ?? (pttl > 0 ? now + pttl : undefined),
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
      return reading(async () => {
        const sentAt = Date.now();
        const [stored, pttl] = recordAndTtl((await redis.multi().hgetall(key).pttl(key).exec()) ?? [], 0);
        const principal = decodeRecord(stored, sentAt);
        if (principal === undefined) return O.none;
        if (live && invalidations?.live() === true && invalidations.version() === version) {
          remember(key, principal, pttl, expiresOf(stored), sentAt);
        }
        return O.some(principal);
      });
    },
    ping: reading(async () => {
      await redis.ping();
    }),
  };

  /** Throws NotReplicated unless the writes so far are on the replicas required. */
  const acknowledged = async () => {
    const { count = 0, timeoutMs = 0 } = options.replicas ?? {};
    const acks = await replicated(redis, count, timeoutMs);
    if (acks < count) throw new NotReplicated(acks);
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
        try {
          await acknowledged();
        } catch (e) {
          // Never handed out, so withdrawn: a failover could lose it, and nobody holds its secret.
          if (e instanceof NotReplicated) await redis.del(key).catch(() => undefined);
          throw e;
        }
        return token;
      }),
    revoke: (token) =>
      attempt(async () => {
        cache.delete(keyOf(token));
        const existed = (await redis.del(keyOf(token))) === 1;
        await acknowledged();
        return existed;
      }),
    list: (owner, subject) => reading(async () => (await owned(owner, subject)).map(({ info }) => info)),
    revokeOwned: (owner, subject) =>
      attempt(async () => {
        const keys = (await owned(owner, subject)).map(({ key }) => key);
        if (keys.length === 0) return 0;
        for (const key of keys) cache.delete(key);
        const deleted = await redis.del(...keys);
        await redis.srem(ownerIndexOf(owner), ...keys);
        await acknowledged();
        return deleted;
      }),
    cacheLive: () => invalidations?.live() ?? false,
    close: async () => {
      cache.clear();
      await invalidations?.close();
    },
  };
};
