import { createRequire } from 'node:module';
import { pino, type Logger as Pino } from 'pino';
import type PinoPretty from 'pino-pretty';
import { ConfigError, type Config } from './config.js';

/**
 * The process's logger. JSON lines on stdout by default, written synchronously (`pino.destination({ sync: true })`):
 * lines come out in order and none waits in a buffer at exit. pino's default destination is asynchronous and flushes
 * at exit with sonic-boom 4's flushSync, which retries a write that failed with EPIPE forever: a service whose stdout
 * reader had gone hung on SIGTERM, never exiting. Here a write error (EPIPE: the reader is gone) silences the logger
 * instead, and the service goes on serving and shuts down as usual.
 * LOG_FORMAT=pretty renders the same lines for humans with pino-pretty, the same way; it is a development tool (a dev
 * dependency), loaded only then.
 */
export const createLogger = ({ logLevel, logFormat }: Pick<Config, 'logLevel' | 'logFormat'>): Pino => {
  if (logFormat === 'json') {
    const destination = pino.destination({ dest: 1, sync: true });
    const logger = pino({ level: logLevel, base: null }, destination);
    destination.on('error', () => {
      logger.level = 'silent';
    });
    return logger;
  }
  let pretty: typeof PinoPretty;
  try {
    pretty = createRequire(import.meta.url)('pino-pretty') as typeof PinoPretty;
  } catch {
    throw new ConfigError(
      'LOG_FORMAT: pretty needs the pino-pretty package, a dev dependency that is not installed here (or pipe the JSON through `npx pino-pretty`); for example LOG_FORMAT=json',
    );
  }
  // In this thread and synchronous too (not pino's transport worker, which waited forever at exit on a closed stdout).
  const destination = pino.destination({ dest: 1, sync: true });
  const logger = pino(
    { level: logLevel, base: null },
    pretty({ destination, sync: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' }),
  );
  destination.on('error', () => {
    logger.level = 'silent';
  });
  return logger;
};
