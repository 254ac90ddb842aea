import { createRequire } from 'node:module';
import { pino, type Logger as Pino } from 'pino';
import type PinoPretty from 'pino-pretty';
import { ConfigError, type Config } from './config.js';

/** Bytes of JSON lines held before they are written at once (below sonic-boom's 16 KiB `maxWrite`). */
const BATCH_BYTES = 8192;

/**
 * The process's logger. JSON lines on stdout by default, written synchronously (`pino.destination({ sync: true })`),
 * in batches: the lines of one turn of the event loop are written together at its end (a `setImmediate` after the
 * first line, or earlier once BATCH_BYTES are held), so a busy server makes one write syscall for many requests
 * instead of one each, and a line waits for no timer. Lines still held when the process exits are written by an
 * 'exit' handler. pino's default destination is asynchronous and flushes at exit with sonic-boom 4's flushSync,
 * which retries a write that failed with EPIPE forever: a service whose stdout reader had gone hung on SIGTERM, never
 * exiting; the synchronous destination's writes fail once instead. A write error (EPIPE: the reader is gone)
 * silences the logger, and the service goes on serving and shuts down as usual.
 * LOG_FORMAT=pretty renders the same lines for humans with pino-pretty, the same way; it is a development tool (a dev
 * dependency), loaded only then.
 */
export const createLogger = ({ logLevel, logFormat }: Pick<Config, 'logLevel' | 'logFormat'>): Pino => {
  if (logFormat === 'json') {
    const destination = pino.destination({ dest: 1, sync: true, minLength: BATCH_BYTES });
    let flushScheduled = false;
    const flushBatch = (): void => {
      flushScheduled = false;
      destination.flush();
    };
    const logger = pino(
      {
        level: logLevel,
        base: null,
        hooks: {
          streamWrite: (line) => {
            if (!flushScheduled) {
              flushScheduled = true;
              setImmediate(flushBatch);
            }
            return line;
          },
        },
      },
      destination,
    );
    destination.on('error', () => {
      logger.level = 'silent';
    });
    process.once('exit', () => {
      try {
        destination.flush();
      } catch {
        // destroyed: nothing more can be written
      }
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
