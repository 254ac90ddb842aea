import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { ServerLimits } from './server-limits.js';

/** What the server keeps about one connection. */
export interface Connection {
  /** Requests read whose response has not closed yet. */
  unanswered: number;
  last: { readonly req: IncomingMessage; readonly res: ServerResponse } | undefined;
  /** Going away: nothing more read on it is answered. */
  closing: boolean;
  lingering: boolean;
  /** The response being produced or sent; the next request waits for it to close. */
  serving: ServerResponse | undefined;
  /** The turn in which a request was last served straight from the parser (server.ts). */
  servedInTurn: number;
  /** Requests read while another was being served, in order. */
  readonly waiting: Array<{ readonly req: IncomingMessage; readonly res: ServerResponse }>;
  /** `socket.bytesRead` at the last sweep of a shutdown (server.ts). */
  sweptAt: number;
}

export const newConnection = (): Connection => ({
  unanswered: 0,
  last: undefined,
  closing: false,
  lingering: false,
  serving: undefined,
  servedInTurn: -1,
  waiting: [],
  sweptAt: -1,
});

/**
 * Closes a connection without losing its last response: a FIN, then what the client still sends is read and dropped
 * (`lingerBytes`, `lingerMs`); closing at once would make the kernel reset it, and the client drop the response.
 */
export const linger = (socket: Socket, conn: Connection, limits: ServerLimits): void => {
  conn.closing = true;
  if (conn.lingering || socket.destroyed) return;
  conn.lingering = true;
  const from = socket.bytesRead;
  socket.end();
  const timer = setTimeout(() => socket.destroy(), limits.lingerMs).unref();
  const req = conn.last?.req;
  if (req !== undefined && !req.complete) req.resume();
  socket.on('data', () => {
    if (socket.bytesRead - from > limits.lingerBytes) socket.pause();
  });
  socket.once('close', () => {
    clearTimeout(timer);
    // A request answered before its body was complete (408, bad framing) ends for whoever still reads it.
    if (req !== undefined && !req.complete && !req.destroyed) req.destroy();
  });
  socket.resume();
};
