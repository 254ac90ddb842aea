import { ReplyError, type Redis } from 'ioredis';
import type { Logger } from '../../../application/ports/logger.js';

/**
 * Redis client-side caching in broadcasting mode (CLIENT TRACKING): Redis tells this process at once of every change
 * to a key under `prefix`, by any client. Lookups are cached only while that stream is known whole: the connection is
 * subscribed to `__redis__:invalidate` with tracking on (set up again after a reconnect, with an empty cache), and it
 * answered a PING sent less than `leaseMs` ago. A PING travels the same ordered stream, so its answer proves every
 * earlier invalidation arrived; a silent connection stops being trusted within `leaseMs` and is made again.
 */
export interface Invalidations {
  /** Whether invalidations can be relied on now (see above). While false, nothing cached may be served. */
  readonly live: () => boolean;
  /** A number that changes with every invalidation received and every loss or gain of the stream. */
  readonly version: () => number;
  readonly close: () => Promise<void>;
}

export interface InvalidationOptions {
  /** Only keys under this prefix are reported. */
  readonly prefix: string;
  /** How often the connection proves itself alive with a PING. */
  readonly heartbeatMs: number;
  /** How long after the last proven moment the stream is still trusted. */
  readonly leaseMs: number;
  /** Called with the keys to forget, or 'all' (the stream was lost or made again, or the database flushed). */
  readonly tell: (keys: readonly string[] | 'all') => void;
  readonly logger?: Logger;
}

export const INVALIDATION_CHANNEL = '__redis__:invalidate';
export const INVALIDATION_CONNECTION_NAME = 'plant-store:token-invalidations';

const isReplyError = (e: unknown): boolean => e instanceof (ReplyError as new () => Error);

/** Opens the invalidation connection beside `redis` (same server and options) and keeps it set up. */
export const listenForInvalidations = (redis: Redis, options: InvalidationOptions): Invalidations => {
  const sub = redis.duplicate({
    connectionName: INVALIDATION_CONNECTION_NAME,
    autoResubscribe: false,
    enableOfflineQueue: false,
    commandTimeout: options.leaseMs,
  });
  sub.on('error', () => undefined); // reconnects are reported by `live`; lookups go to Redis meanwhile
  const { tell } = options;

  let version = 0;
  let subscribed = false;
  /** Which connection (ready event) the state belongs to; an answer for an older one is ignored. */
  let session = 0;
  /** When the latest PING that was answered had been sent. */
  let provenAt = -Infinity;
  let refused = false;
  let closed = false;

  const lose = () => {
    version++;
    subscribed = false;
    tell('all');
  };

  const setUp = async () => {
    const mine = ++session;
    lose();
    try {
      const sentAt = Date.now();
      const id = await sub.client('ID');
      await sub.call('CLIENT', 'TRACKING', 'ON', 'REDIRECT', String(id), 'BCAST', 'PREFIX', options.prefix);
      await sub.subscribe(INVALIDATION_CHANNEL);
      if (mine !== session || closed) return;
      version++;
      tell('all');
      provenAt = sentAt;
      subscribed = true;
    } catch (e) {
      // Redis answered with an error (no CLIENT TRACKING before Redis 6, or an ACL that forbids it): the cache stays
      // off. Anything else is the connection failing; ioredis reconnects and this runs again.
      if (isReplyError(e) && !refused) {
        refused = true;
        options.logger?.warn(
          { redis: 'invalidations', err: e instanceof Error ? e.message : String(e) },
          'token cache off: Redis refused CLIENT TRACKING (it needs Redis 6 or later and the CLIENT command); every token lookup goes to Redis',
        );
      }
    }
  };

  sub.on('ready', () => void setUp());
  sub.on('close', () => {
    session++;
    lose();
  });
  sub.on('messageBuffer', (channel: Buffer, message: unknown) => {
    if (channel.toString() !== INVALIDATION_CHANNEL) return;
    version++;
    if (message === null) tell('all');
    else if (Array.isArray(message)) tell(message.map((k: Buffer | string) => k.toString()));
    else if (Buffer.isBuffer(message)) tell([message.toString()]);
    else tell('all');
  });

  const heartbeat = setInterval(() => {
    if (!subscribed) return;
    const mine = session;
    const sentAt = Date.now();
    sub.ping().then(
      () => {
        if (mine === session && sentAt > provenAt) provenAt = sentAt;
      },
      () => {
        if (mine !== session || closed) return;
        // No answer within the lease: whatever is on its way cannot be relied on. Start over on a new connection
        // (the socket is destroyed rather than ended: a silent peer would never acknowledge a graceful close).
        session++;
        lose();
        sub.stream.destroy();
      },
    );
  }, options.heartbeatMs);
  heartbeat.unref();

  return {
    live: () => subscribed && Date.now() - provenAt < options.leaseMs,
    version: () => version,
    close: async () => {
      closed = true;
      clearInterval(heartbeat);
      lose();
      sub.disconnect();
    },
  };
};
