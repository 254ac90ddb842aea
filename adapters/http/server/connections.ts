import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { ServerLimits } from './server-limits.js';

/** What the server keeps about one connection. */
export interface Connection {
  /** Requests handed to the app (or answered here) whose response has not closed yet. */
  inFlight: number;
  /** The latest request read on this connection, with its response. */
  last: { readonly req: IncomingMessage; readonly res: ServerResponse } | undefined;
  /** The connection is going away: nothing more read on it is answered. */
  closing: boolean;
  lingering: boolean;
  /** `socket.bytesRead` when lingering began. */
  lingerFrom: number;
  /** The response the app is producing or the socket is still sending; the next request waits for it to close. */
  serving: ServerResponse | undefined;
  /** The turn of the event loop (server.ts) in which a request of this connection was last served from the parser. */
  servedInTurn: number;
  /** Requests read while another was being served, in order. */
  readonly waiting: Array<{ readonly req: IncomingMessage; readonly res: ServerResponse }>;
  /** Responses of this connection not yet closed: settled when the socket closes, whether or not they were sent. */
  readonly open: Set<ServerResponse>;
}

/** The state of each open connection, made on first use and gone with the socket. */
export const connectionStates = () => {
  const connections = new WeakMap<Socket, Connection>();
  return (socket: Socket): Connection => {
    let conn = connections.get(socket);
    if (conn === undefined) {
      conn = {
        inFlight: 0,
        last: undefined,
        closing: false,
        lingering: false,
        lingerFrom: 0,
        serving: undefined,
        servedInTurn: -1,
        waiting: [],
        open: new Set(),
      };
      connections.set(socket, conn);
    }
    return conn;
  };
};

export const lingering = (limits: ServerLimits) => {
  /** Once lingering has read `lingerBytes`, the connection stops reading and waits out `lingerMs`. */
  const boundLinger = (socket: Socket, conn: Connection): void => {
    if (socket.bytesRead - conn.lingerFrom > limits.lingerBytes) socket.pause();
  };

  /**
   * Closes a connection without losing its last response: end our side (FIN after the response), keep reading and
   * discarding what the client still sends (bounded), and destroy the socket when the client closes or `lingerMs`
   * has passed. Closing at once while the client is still sending (the rest of a refused body) would make the
   * kernel answer with a reset, and the client's stack would drop the response before the client read it.
   */
  const linger = (socket: Socket, conn: Connection): void => {
    conn.closing = true;
    if (conn.lingering || socket.destroyed) return;
    conn.lingering = true;
    conn.lingerFrom = socket.bytesRead;
    socket.end();
    const timer = setTimeout(() => socket.destroy(), limits.lingerMs).unref();
    const req = conn.last?.req;
    socket.once('close', () => {
      clearTimeout(timer);
      // A request answered here before its body was complete (408, bad framing) ends for whoever still reads it.
      if (req !== undefined && !req.complete && !req.destroyed) req.destroy();
    });
    // Nothing read from now on is parsed, so nothing more reaches the app: once a 'data' listener is added, Node's
    // parser takes its bytes from the socket's 'data' event (its own listener, removed here) instead of reading the
    // socket directly. What arrives is counted and dropped.
    socket.removeAllListeners('data');
    socket.on('data', () => boundLinger(socket, conn));
    socket.resume();
  };

  return { linger, boundLinger };
};
