import type { Logger } from '../../application/ports/logger.js';

/** One line a capturing logger kept: its level and message (fields are dropped). */
export interface Line {
  readonly level: 'info' | 'warn' | 'error';
  readonly message: string;
}

/** A logger that keeps the info, warn and error lines it is given, for a test to read. */
export const captureLogs = (): { logger: Logger; lines: Line[] } => {
  const lines: Line[] = [];
  const logger: Logger = {
    debug: () => undefined,
    info: (_f, message) => void lines.push({ level: 'info', message }),
    warn: (_f, message) => void lines.push({ level: 'warn', message }),
    error: (_f, message) => void lines.push({ level: 'error', message }),
  };
  return { logger, lines };
};
