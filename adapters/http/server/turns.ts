import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Connection } from './connections.js';
import type { UnsentBound } from './exchange.js';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

export interface Turns {
  /** Serves a request read on `conn` now, or once the responses before it have closed. */
  readonly admit: (conn: Connection, req: IncomingMessage, res: ServerResponse, probe: boolean) => void;
  /** A response of `conn` closed: the next request waiting on it is served. */
  readonly closed: (conn: Connection, res: ServerResponse) => void;
  /** The unsent bound has room again: requests waiting for it are served. */
  readonly room: () => void;
}

/**
 * One response per connection at a time: the next request read on it is handed on once this response has closed (the
 * kernel took all of it), so a client that does not read holds one response, however many it pipelined; the body of a
 * request that waits is read as it comes (body.ts's `readEarly`). Reading is not paused here: Node pauses a connection
 * whose responses back up and resumes it on 'drain', and a resume of ours could restart it under Node's pause.
 * Requests that waited are served one per turn of the event loop, after what that turn read: served back to back,
 * hundreds of connections pipelining large pages would hold the loop for seconds. While the unsent bound is full none
 * is, and only probes are served straight from the parser: each response is counted before the next begins. At most
 * one request per connection and turn is served straight from the parser: a response can be done before Node parses
 * the next request of the read, so that they would not count.
 */
export const turns = (handler: Handler, unsent: Pick<UnsentBound, 'full'>, early: Handler): Turns => {
  const queued: Array<() => void> = [];
  let scheduled = false;
  const schedule = (): void => {
    if (scheduled || queued.length === 0 || unsent.full()) return;
    scheduled = true;
    setImmediate(serveQueued);
  };
  const serveQueued = (): void => {
    scheduled = false;
    if (!unsent.full()) queued.shift()?.();
    schedule();
  };
  const serveLater = (req: IncomingMessage, res: ServerResponse, conn: Connection): void => {
    conn.serving = res;
    queued.push(() => void (req.socket.destroyed || handler(req, res)));
    schedule();
  };

  let turn = 0;
  let turnEnds = false;
  const nextTurn = (): void => {
    turn += 1;
    turnEnds = false;
  };

  return {
    admit: (conn, req, res, probe) => {
      if (conn.serving !== undefined) {
        conn.waiting.push({ req, res });
        return early(req, res);
      }
      if (!turnEnds) {
        turnEnds = true;
        setImmediate(nextTurn);
      }
      if (conn.servedInTurn === turn || (unsent.full() && !probe)) return serveLater(req, res, conn);
      conn.servedInTurn = turn;
      conn.serving = res;
      handler(req, res);
    },
    closed: (conn, res) => {
      if (conn.serving !== res) return;
      conn.serving = undefined;
      const next = conn.waiting.shift();
      if (next !== undefined) serveLater(next.req, next.res, conn);
    },
    room: schedule,
  };
};
