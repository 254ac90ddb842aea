import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { ServerLimits } from './server-limits.js';

/** What the server keeps about one connection. */
export interface Connection {
  readonly socket: Socket;
  /** Requests read whose response has not closed yet. */
  unanswered: number;
  last: { readonly req: IncomingMessage; readonly res: ServerResponse } | undefined;
  /** Going away: nothing more read on it is answered. */
  closing: boolean;
  /** Requests read after it began to close: not answered, counted in one log line when it closes. */
  ignored: number;
  lingering: boolean;
  /** The response being produced or sent; the next request waits for it to close. */
  serving: ServerResponse | undefined;
  /** The turn in which a request was last served straight from the parser (turns.ts). */
  servedInTurn: number;
  /** Requests read while another was being served, in order. */
  readonly waiting: Array<{ readonly req: IncomingMessage; readonly res: ServerResponse }>;
  /** Bytes moved either way at the last idle check, and when that count last changed. */
  moved: number;
  movedAt: number;
  /** During a shutdown: the response that says `Connection: close`, the last one read (shutdown.ts). */
  closeOn: ServerResponse | undefined;
  /** `socket.bytesRead` at the last sweep of a shutdown (shutdown.ts). */
  sweptAt: number;
}

export const newConnection = (socket: Socket): Connection => ({
  socket,
  unanswered: 0,
  last: undefined,
  closing: false,
  ignored: 0,
  lingering: false,
  serving: undefined,
  servedInTurn: -1,
  waiting: [],
  moved: -1,
  movedAt: 0,
  closeOn: undefined,
  sweptAt: -1,
});

/**
 * Closes a connection without losing its last response: a FIN, then what the client still sends is read and dropped
 * (`lingerBytes`, `lingerMs`); closing at once would make the kernel reset it, and the client drop the response.
 */
export const linger = (conn: Connection, limits: ServerLimits): void => {
  const { socket } = conn;
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

/**
 * Closes each connection that has a request open and moved no byte either way for `idleTimeoutMs` (IDLE_TIMEOUT_MS):
 * checked every fortieth of it, so one closes within 1.05 times the timeout. Bytes the kernel took count as moved,
 * not those queued in the process (`writableLength`): a response stuck unread is not progress. Not Node's
 * `server.timeout`: a socket skips its first timeout while a write is queued, which doubles it for such a response.
 */
export const closeIdle = (
  connections: ReadonlyMap<Socket, Connection>,
  idleTimeoutMs: number,
  closed: (conn: Connection) => void,
): (() => void) => {
  const look = (): void => {
    const now = performance.now();
    for (const conn of connections.values()) {
      const { socket } = conn;
      const moved = socket.bytesRead + socket.bytesWritten - socket.writableLength;
      if (conn.unanswered === 0 || moved !== conn.moved) {
        conn.moved = moved;
        conn.movedAt = now;
      } else if (now - conn.movedAt >= idleTimeoutMs && !socket.destroyed) {
        closed(conn);
        socket.destroy();
      }
    }
  };
  const timer = setInterval(look, Math.max(10, Math.floor(idleTimeoutMs / 40))).unref();
  return () => clearInterval(timer);
};

/**
 * The rest of a refusal sent while its request's body still arrives (exchange.ts's `endAfterBody`): the answer goes
 * out whole now (its Content-Length lets the client read it before the end), and the response ends, so that Node
 * closes the connection, once the body has arrived or `lingerMs` passed; past `lingerBytes` more, nothing more is
 * read meanwhile (a client still sending waits, and has the time to read its answer).
 */
export const endAfterBody = (res: ServerResponse, body: string, limits: ServerLimits): void => {
  res.write(body);
  const req = res.req;
  let read = 0;
  const end = (): void => {
    clearTimeout(timer);
    req.off('data', onData).off('end', end).off('close', end).off('error', end);
    if (!res.writableEnded) res.end();
  };
  const onData = (chunk: Buffer): void => {
    read += chunk.length;
    if (read > limits.lingerBytes) req.pause();
  };
  const timer = setTimeout(end, limits.lingerMs).unref();
  req.on('data', onData).once('end', end).once('close', end).once('error', end);
  req.resume();
};
