import { Redis, type RedisOptions } from 'ioredis';

/** One Redis server, as REDIS_URL names it (decoded at start-up: nothing is parsed when connecting). */
export interface RedisServer {
  readonly kind: 'server';
  readonly host: string;
  readonly port: number;
  readonly username?: string;
  readonly password?: string;
  readonly db: number;
  readonly tls: boolean;
}

/** A Redis primary found through Sentinel (REDIS_SENTINELS): whichever server the sentinels name now. */
export interface RedisSentinel {
  readonly kind: 'sentinel';
  readonly sentinels: readonly { readonly host: string; readonly port: number }[];
  /** The name the sentinels monitor the primary under. */
  readonly name: string;
  /** The primary's and its replicas' credentials. */
  readonly username?: string;
  readonly password?: string;
  /** The sentinels' own password, when they require one. */
  readonly sentinelPassword?: string;
  readonly db: number;
}

export type RedisTarget = RedisServer | RedisSentinel;

/** Where `target` points, for logs and messages: addresses only, never a credential. */
export const describeTarget = (target: RedisTarget): string =>
  target.kind === 'server'
    ? `${target.host}:${target.port}/${target.db}`
    : `the primary "${target.name}" of the sentinels ${target.sentinels.map((s) => `${s.host}:${s.port}`).join(',')}, database ${target.db}`;

const targetOptions = (target: RedisTarget | string): RedisOptions | string => {
  if (typeof target === 'string') return target;
  const credentials = {
    ...(target.username === undefined ? {} : { username: target.username }),
    ...(target.password === undefined ? {} : { password: target.password }),
    db: target.db,
  };
  if (target.kind === 'server') {
    return { host: target.host, port: target.port, ...credentials, ...(target.tls ? { tls: {} } : {}) };
  }
  return {
    sentinels: target.sentinels.map(({ host, port }) => ({ host, port })),
    name: target.name,
    ...(target.sentinelPassword === undefined ? {} : { sentinelPassword: target.sentinelPassword }),
    ...credentials,
  };
};

const isReadOnly = (e: Error) => e.message.startsWith('READONLY');

/**
 * An ioredis connection that fails fast: no offline queue nor retries, a slow server fails at `timeoutMs`, and ioredis
 * reconnects in the background (at most every 500 ms; through Sentinel every 100 ms, each time asking a sentinel for
 * the primary, the next one in turn). `onError` listens to its 'error' events, which would crash the process without a listener (every
 * failure also reaches its caller as a rejected command). A URL string is for the tests.
 */
export const redisConnection = (
  target: RedisTarget | string,
  timeoutMs: number,
  onError: (e: Error) => void = () => undefined,
  /** What the connection is for, as `CLIENT LIST` shows it to Redis's operators. */
  name?: string,
): Redis => {
  const options: RedisOptions = {
    ...(name === undefined ? {} : { connectionName: name }),
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: timeoutMs,
    // A live connection silent for `timeoutMs` is destroyed and made again: else every command meanwhile would wait
    // in the socket's buffer and ioredis's queue, unbounded.
    socketTimeout: timeoutMs,
    connectTimeout: timeoutMs,
    sentinelCommandTimeout: timeoutMs,
    autoResendUnfulfilledCommands: false,
    // Through Sentinel, sooner: until every sentinel has heard of a promotion (their hello messages, every 2 s), some
    // still name the old primary, and each reconnection asks the next sentinel, so the one that knows comes up soon.
    retryStrategy: (attempt) =>
      Math.min(50 * attempt, typeof target !== 'string' && target.kind === 'sentinel' ? 100 : 500),
    // A database the server refuses (REDIS_URL .../99 where it has 16) would leave ioredis serving database 0, another
    // namespace of tokens and counters: the connection is dropped instead and retried like one refused outright. A
    // READONLY answer is a primary demoted under us (a failover it survived): reconnecting finds the new one.
    reconnectOnError: (e) => (e as Error & { command?: { name?: string } }).command?.name === 'select' || isReadOnly(e),
    // After a close, ioredis waits this long for the socket's 'close' before destroying it; a socket the server
    // already dropped never sends one, and the default 2 s timer would hold the process that long.
    disconnectTimeout: 500,
  };
  const given = targetOptions(target);
  const redis = typeof given === 'string' ? new Redis(given, options) : new Redis({ ...given, ...options });
  return redis.on('error', onError);
};

/** The server a ready connection talks to, `host:port` (an IPv6 address in brackets); undefined while not connected. */
export const connectedTo = (redis: Redis): string | undefined => {
  if (redis.status !== 'ready') return undefined;
  const { remoteAddress, remotePort } = redis.stream;
  if (remoteAddress === undefined || remotePort === undefined) return undefined;
  return `${remoteAddress.includes(':') ? `[${remoteAddress}]` : remoteAddress}:${remotePort}`;
};

/** Closes without waiting on a server that may be gone. */
export const closeRedis = async (redis: Redis): Promise<void> => {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([redis.quit(), new Promise((r) => (timer = setTimeout(r, 500)))]);
  } catch {
    // already closed or unreachable
  } finally {
    clearTimeout(timer);
  }
  redis.disconnect();
};

/** Waits, at most `timeoutMs`, for the first connection; `false` when it did not come (the caller still runs). */
export const whenReady = (redis: Redis, timeoutMs: number): Promise<boolean> => {
  if (redis.status === 'ready') return Promise.resolve(true);
  return new Promise((resolve) => {
    const done = (ready: boolean) => {
      clearTimeout(timer);
      redis.off('ready', onReady);
      resolve(ready);
    };
    const onReady = () => done(true);
    const timer = setTimeout(() => done(false), timeoutMs);
    redis.once('ready', onReady);
  });
};
