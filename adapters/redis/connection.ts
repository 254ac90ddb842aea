import { Redis } from 'ioredis';

/**
 * An ioredis connection that fails fast: no offline queue nor retries, a slow server fails at `timeoutMs`, and ioredis
 * reconnects in the background (at most every 500 ms). `onError` listens to its 'error' events, which would crash the
 * process without a listener (every failure also reaches its caller as a rejected command).
 */
export const redisConnection = (
  url: string,
  timeoutMs: number,
  onError: (e: Error) => void = () => undefined,
  /** What the connection is for, as `CLIENT LIST` shows it to Redis's operators. */
  name?: string,
): Redis =>
  new Redis(url, {
    ...(name === undefined ? {} : { connectionName: name }),
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: timeoutMs,
    // A live connection silent for `timeoutMs` is destroyed and made again: else every command meanwhile would wait
    // in the socket's buffer and ioredis's queue, unbounded.
    socketTimeout: timeoutMs,
    connectTimeout: timeoutMs,
    autoResendUnfulfilledCommands: false,
    retryStrategy: (attempt) => Math.min(50 * attempt, 500),
    // A database the server refuses (REDIS_URL .../99 where it has 16) would leave ioredis serving database 0, another
    // namespace of tokens and counters: the connection is dropped instead and retried like one refused outright.
    reconnectOnError: (e) => (e as Error & { command?: { name?: string } }).command?.name === 'select',
    // After a close, ioredis waits this long for the socket's 'close' before destroying it; a socket the server
    // already dropped never sends one, and the default 2 s timer would hold the process that long.
    disconnectTimeout: 500,
  }).on('error', onError);

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
