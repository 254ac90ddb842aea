import { createRequire } from 'node:module';
import { pino, type Logger as Pino } from 'pino';
import type PinoPretty from 'pino-pretty';
import { ConfigError, type Config } from './config.js';

/** Bytes of JSON lines gathered in one turn of the event loop before they are written at once. */
const BATCH_BYTES = 8192;
/** Bytes of lines the process holds for a stdout that does not take them; past it, lines are dropped and counted. */
export const LOG_HELD_BYTES = 1024 * 1024;

/** What the process writes its log lines to: a writable stream that may hold what its reader has not taken yet. */
type Out = Pick<NodeJS.WritableStream, 'write' | 'on'> & {
  readonly writableLength: number;
  readonly destroyed: boolean;
};

/**
 * A pino destination over stdout that never blocks: one turn's lines are written together. On a pipe or socket, what
 * the reader has not taken waits in the stream; past LOG_HELD_BYTES lines are dropped, counted, and reported once it
 * drains. A reader gone (EPIPE) silences the logger; a file or terminal is written synchronously by Node.
 */
export const stdoutDestination = (out: Out, heldBytes = LOG_HELD_BYTES) => {
  let batch = '';
  let lines = 0;
  let scheduled = false;
  let dropped = 0;
  let onDropped: (count: number) => void = () => undefined;
  const flush = (): void => {
    scheduled = false;
    if (batch === '') return;
    const text = batch;
    const count = lines;
    batch = '';
    lines = 0;
    if (out.destroyed) return;
    if (out.writableLength + text.length > heldBytes) dropped += count;
    else out.write(text);
  };
  out.on('drain', () => {
    if (dropped === 0) return;
    const count = dropped;
    dropped = 0;
    onDropped(count);
  });
  return {
    write: (line: string): void => {
      batch += line;
      lines += 1;
      if (batch.length >= BATCH_BYTES) flush();
      else if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
    },
    /** Writes what is held now; pino's `logger.flush(cb)` comes here. */
    flush: (done?: () => void): void => {
      flush();
      done?.();
    },
    /** Called once stdout has drained after lines were dropped, with their count. */
    onDropped: (report: (count: number) => void): void => {
      onDropped = report;
    },
  };
};

/** Resolves once stdout holds nothing unread, or after `ms`: a stuck reader delays the exit by `ms` at most. */
export const logDrained = (ms: number, out: Out = process.stdout): Promise<void> =>
  new Promise((resolve) => {
    if (out.writableLength === 0 || out.destroyed) return resolve();
    const timer = setTimeout(resolve, ms);
    out.on('drain', () => {
      clearTimeout(timer);
      resolve();
    });
  });

/** JSON lines through stdoutDestination (a slow reader costs lines, never the loop); LOG_FORMAT=pretty: pino-pretty. */
export const createLogger = ({ logLevel, logFormat }: Pick<Config, 'logLevel' | 'logFormat'>): Pino => {
  if (logFormat === 'json') {
    const destination = stdoutDestination(process.stdout);
    const logger = pino({ level: logLevel, base: null }, destination);
    destination.onDropped((droppedLines) =>
      logger.warn({ droppedLines }, 'log lines dropped: stdout was not read fast enough'),
    );
    process.stdout.on('close', () => {
      logger.level = 'silent';
    });
    process.once('exit', () => destination.flush());
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
