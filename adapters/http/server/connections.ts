import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { ServerLimits } from './server-limits.js';

/** What the server keeps about one connection. */
export interface Connection {
  /** Requests read on this connection whose response has not closed yet: counted here, bounded by the server. */
  unanswered: number;
  /** The latest request read on this connection, with its response. */
  last: { readonly req: IncomingMessage; readonly res: ServerResponse } | undefined;
  /** The connection is going away: nothing more read on it is answered. */
  closing: boolean;
  lingering: boolean;
  /** The response the app is producing or the socket is still sending; the next request waits for it to close. */
  serving: ServerResponse | undefined;
  /** The turn of the event loop (server.ts) in which a request of this connection was last served from the parser. */
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
 * Closes a connection without losing its last response: end our side (FIN after the response), keep reading and
 * discarding what the client still sends, up to `lingerBytes` (then it stops reading), and destroy the socket when the client closes or
 * `lingerMs` has passed. Closing at once while the client is still sending (the rest of a refused body) would make the
 * kernel answer with a reset, and the client's stack would drop the response before the client read it. What is read
 * meanwhile goes to Node's parser as usual: a request it finds is not answered (the connection is closing), and a body
 * left unread is resumed, so discarded.
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
    // A request answered here before its body was complete (408, bad framing) ends for whoever still reads it.
    if (req !== undefined && !req.complete && !req.destroyed) req.destroy();
  });
  socket.resume();
};
