import type { Server, ServerResponse } from 'node:http';
import { Server as NetServer, type Socket } from 'node:net';
import type { Connection } from './connections.js';

/** How long a connection that owes nothing must read nothing, during a shutdown, to be closed. */
const SWEEP_MS = 100;

export interface Shutdown {
  /** Stops accepting and resolves once every connection is gone (shutdown.ts's header). */
  readonly drain: () => Promise<void>;
  /**
   * Called for each request read: during a shutdown, its response becomes the one that says `Connection: close` on its
   * connection. False when the connection's close was already sent: the request is received too late to be answered.
   */
  readonly admit: (conn: Connection, res: ServerResponse) => boolean;
}

/**
 * A shutdown that loses no request it has read (CONTRACT §11, §12). It stops listening; on each connection only the
 * last response read says `Connection: close` (all of them would make Node close the connection after the first,
 * and the requests pipelined behind it would be lost), and a request read later takes that over while the earlier
 * response's head is unsent; a connection that owes nothing and read nothing for `SWEEP_MS` is closed. What is still
 * open at the shutdown bound is cut by main.ts.
 */
export const shutdown = (server: Server, connections: ReadonlyMap<Socket, Connection>): Shutdown => {
  let draining = false;
  const closeOn = (conn: Connection, res: ServerResponse): void => {
    const earlier = conn.closeOn;
    if (earlier !== undefined && !earlier.headersSent) earlier.removeHeader('Connection');
    res.setHeader('Connection', 'close');
    conn.closeOn = res;
  };
  // In the check phase, after the turn's poll: what the kernel holds for a connection has been read by then.
  const look = (): void => {
    for (const [socket, conn] of connections) {
      if (conn.unanswered === 0 && socket.bytesRead === conn.sweptAt) socket.destroy();
      conn.sweptAt = socket.bytesRead;
    }
  };
  return {
    admit: (conn, res) => {
      if (!draining) return true;
      if (conn.closeOn?.headersSent === true) return false;
      closeOn(conn, res);
      return true;
    },
    drain: () => {
      draining = true;
      // net.Server's own close, not http.Server's: that one also closes at once every connection with no request
      // parsed, and on Node 26 that includes one just accepted whose request is still unread in the kernel.
      const closed = new Promise<void>((resolve) => NetServer.prototype.close.call(server, () => resolve()));
      for (const conn of connections.values()) {
        const last = conn.waiting.at(-1)?.res ?? conn.serving;
        if (last !== undefined && !last.headersSent) closeOn(conn, last);
      }
      const sweep = setInterval(() => setImmediate(look), SWEEP_MS).unref();
      return closed.finally(() => clearInterval(sweep));
    },
  };
};
