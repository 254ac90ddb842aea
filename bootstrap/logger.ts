import { createRequire } from 'node:module';
import { pino, type Logger as Pino } from 'pino';
import { ConfigError, type Config } from './config.js';

/**
 * The process's logger. JSON lines on stdout by default (pino's own synchronous destination, which stops writing on
 * EPIPE, so a closed stdout never stops the service or its shutdown). LOG_FORMAT=pretty renders the same lines for
 * humans with pino-pretty in pino's transport worker; it is a development tool (a dev dependency).
 */
export const createLogger = ({ logLevel, logFormat }: Pick<Config, 'logLevel' | 'logFormat'>): Pino => {
  if (logFormat === 'json') return pino({ level: logLevel, base: null });
  try {
    createRequire(import.meta.url).resolve('pino-pretty');
  } catch {
    throw new ConfigError(
      'LOG_FORMAT: pretty needs the pino-pretty package, a dev dependency that is not installed here (or pipe the JSON through `npx pino-pretty`); for example LOG_FORMAT=json',
    );
  }
  return pino(
    { level: logLevel, base: null },
    pino.transport({
      target: 'pino-pretty',
      options: { destination: 1, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' },
    }),
  );
};
