import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from '../../../application/ports/logger.js';
import { answerFailure, type Edge } from './answer.js';
import { badFields, originForm, parserFailure, type ParserError } from './before-routing.js';
import { connectionStates, lingering, type Connection } from './connections.js';
import type { CorsPolicy } from './cors.js';
import { refusalResponse, type ServerRefusal } from './refusals.js';
import { requestIdFrom } from './request-id.js';
import { checkingInterval, type ServerLimits } from './server-limits.js';
import { byteBudget, expectsContinueOnly, setBodyBudget, SharingServerResponse } from './exchange.js';
import { unsentBound } from './unsent.js';

export { defaultServerLimits, type ServerLimits } from './server-limits.js';
export { originForm } from './before-routing.js';
export { sharedBody } from './exchange.js';

export interface HttpServerDeps {
  readonly logger: Logger;
  readonly limits: ServerLimits;
  /** Told of every request answered here, below the app (for the request counter). */
  readonly refused?: ((method: string | undefined, status: number) => void) | undefined;
  /** The CORS fields of the app's responses, on those answered here too (CORS_ORIGINS; none when off). */
  readonly cors?: CorsPolicy | undefined;
}

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/**
 * Node's HTTP server offers no public hook for five things done here, so this module leans on five internals that
 * have been stable for years, each pinned by a test in test/edge: the per-connection `parser.onIncoming` (to stop
 * parsing a connection that is closing), `socket.destroySoon()` (what Node calls to close after a last response),
 * the parser taking its bytes from the socket's 'data' listener once one is added (to stop parsing while the
 * connection lingers), a response's 'prefinish' event (its last bytes handed to the socket: what the socket then
 * holds unsent is counted), and the socket handle's `writeQueueSize` (libuv's count of a write's bytes the kernel has not taken, which net.Socket's own idle
 * timer reads: unsent.ts sees a client read by it).
 */
interface ParserHooks {
  onIncoming?: (req: IncomingMessage, keepAlive: boolean) => number;
}
/** What `parser.onIncoming` returns to make llhttp stop at the end of the current request's headers. */
const STOP_PARSING = 2;

/** How many requests that waited behind another on their connection are served in one turn of the event loop. */
const QUEUED_PER_TURN = 1;

/**
 * How long after a shutdown begins a connection that has sent nothing is closed: long enough for a request already on
 * its way (or in the kernel, not yet read) to be read, so that only connections that really are silent go.
 */
const SILENT_GRACE_MS = 100;

/** Requests each server has handed on (or answered) whose response has not closed yet. */
const inFlightOf = new WeakMap<Server, { count: number }>();
/** How each server stops keeping connections alive: see `closeAfterResponses`. */
const drainOf = new WeakMap<Server, () => void>();

/**
 * From now on every connection of the server closes after the last response it owes, which says `Connection: close`:
 * for a shutdown, so that no client or balancer sends another request on a connection about to close. A connection
 * that has still sent nothing `SILENT_GRACE_MS` later (a browser's preconnect, a balancer's TCP check) owes nothing
 * and is closed then: Node's `closeIdleConnections` counts it as busy from the moment it was accepted, and
 * `server.close()` stops the checks that would have timed it out, so it would otherwise hold the shutdown to its bound.
 */
export const closeAfterResponses = (server: Server): void => drainOf.get(server)?.();

/**
 * Requests received by a server from createHttpServer and not yet answered or cut (their response has not closed),
 * counted where the server already follows each response, so that no second listener per request is needed.
 */
export const requestsInFlight = (server: Server): number => inFlightOf.get(server)?.count ?? 0;

/**
 * Creates the node:http server around `handler` with every limit of `limits` set, and makes every failure found
 * below the app (by Node's parser, its timeouts, or the checks here) answer in the contract's shape: the status,
 * the Error body, X-Request-Id, no-store, nosniff and `Connection: close`, plus one log line.
 *
 * Memory per connection is bounded by closing a connection that has more than `maxPipelinedRequests` requests
 * unanswered, and by stopping the parser there: Node otherwise parses every request of a chunk it has read (up to
 * 64 KiB, over a thousand small GETs) into objects before its own backpressure can stop reading, so pausing alone
 * would not bound it. The number of connections is bounded by `maxConnections`. The bytes held for clients that do not
 * read are bounded per connection (one response at a time, see `serve`) and in total (`maxUnsentBytes`, unsent.ts),
 * and the request-body bytes held while bodies are read in total (`maxBodyBytes`: each connection's body budget,
 * exchange.ts, which body.ts takes from).
 */
export const createHttpServer = (handler: Handler, { logger, limits, refused, cors }: HttpServerDeps): Server => {
  const server = createServer({
    maxHeaderSize: limits.maxHeaderSize,
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    // How often Node checks the two timeouts: its default, 30 s, would let a 10 s timeout run to 40 s.
    connectionsCheckingInterval: checkingInterval(limits),
    // Checked here instead, so that the 400 carries the Error body.
    requireHostHeader: false,
    // Notes a shared body at `end` (exchange.ts), for the unsent-bytes bound.
    ServerResponse: SharingServerResponse,
  });
  server.maxConnections = limits.maxConnections;
  server.timeout = limits.idleTimeoutMs;
  // Node silently drops the headers beyond 2000 by default; the header bytes are bounded by maxHeaderSize instead.
  server.maxHeadersCount = 0;
  const inFlight = { count: 0 };
  inFlightOf.set(server, inFlight);

  const connectionOf = connectionStates();
  const { linger, boundLinger } = lingering(limits);
  const sockets = new Set<Socket>();
  let draining = false;
  drainOf.set(server, () => {
    draining = true;
    for (const socket of sockets) {
      const last = connectionOf(socket).last?.res;
      if (last !== undefined && !last.headersSent) last.shouldKeepAlive = false;
    }
    // Not at once: a connection accepted in this very turn may have its request waiting in the kernel, unread.
    setTimeout(() => {
      for (const socket of sockets) {
        if (connectionOf(socket).last === undefined && socket.bytesRead === 0) socket.destroy();
      }
    }, SILENT_GRACE_MS).unref();
  });

  const edge: Edge = { logger, cors };
  /**
   * Answers a refusal through the request's response, or on the bare socket when Node has none (then no request was
   * read: no id or origin of its own is known), and counts it.
   */
  const refuse = (
    to: ServerResponse | Socket,
    req: IncomingMessage | undefined,
    method: string | undefined,
    failure: ServerRefusal,
    code: string,
  ): void => {
    const asker = { id: requestIdFrom(req?.headers['x-request-id']), origin: req?.headers.origin };
    const status = answerFailure(edge, to, asker, refusalResponse(failure), { method, code });
    refused?.(method, status);
  };

  /** Answers a request that reached the server with a failure, through its own response, and closes. */
  const answer = (req: IncomingMessage, res: ServerResponse, failure: ServerRefusal, code: string): void => {
    connectionOf(req.socket).closing = true;
    refuse(res, req, req.method, failure, code);
  };

  const { written, sent } = unsentBound(limits, logger, (socket) => {
    connectionOf(socket).closing = true;
    socket.destroy();
  });

  /**
   * Hands a request to the app. One response per connection at a time: the next request read on the connection is
   * handed on only once this response has closed, that is once the kernel has taken all of it. So a client that does
   * not read holds at most one response in the process, however many requests it pipelined.
   */
  const serve = (socket: Socket, conn: Connection, req: IncomingMessage, res: ServerResponse): void => {
    conn.serving = res;
    res.on('prefinish', () => written(socket, res)); // once per response: no `once` wrapper needed
    handler(req, res);
  };

  /**
   * Serves a request in a later turn of the event loop (see `serveQueued`). The connection stays taken by it until it
   * is served, so that none read meanwhile goes first.
   */
  const serveLater = (socket: Socket, conn: Connection, req: IncomingMessage, res: ServerResponse): void => {
    conn.serving = res;
    queued.push(() => {
      if (!socket.destroyed) serve(socket, conn, req, res);
    });
    if (!queueScheduled) {
      queueScheduled = true;
      setImmediate(serveQueued);
    }
  };

  /** A response closed (sent, or its connection gone): counted out, and the next waiting request is served. */
  const settle = (socket: Socket, conn: Connection, res: ServerResponse): void => {
    if (!conn.open.delete(res)) return;
    conn.inFlight -= 1;
    inFlight.count -= 1;
    if (conn.serving !== res) return;
    sent(socket);
    const next = conn.waiting.shift();
    conn.serving = undefined;
    if (next !== undefined) serveLater(socket, conn, next.req, next.res);
  };

  /**
   * Requests that waited behind a response on their connection are served one per turn of the event loop, after
   * whatever was read in that turn. A response the kernel takes at once closes within the turn, so each connection's
   * pipelined requests would otherwise be served back to back, and hundreds of connections pipelining large pages
   * would hold the event loop for seconds before a new connection (a probe's /healthz) is even accepted.
   */
  const queued: Array<() => void> = [];
  let queueScheduled = false;

  /**
   * Turns of the event loop, counted while requests are read: a connection has at most one request served straight
   * from the parser per turn, and a later one read in the same turn is served from the queue. A response can be done
   * before Node parses the next request of the same read (Node runs the microtasks between a request's body and its
   * end, and a body already read is taken at once, body.ts): without this, a client pipelining small POSTs in one
   * write would have each served and finished before the next is parsed, so that no request ever waited, none was
   * counted against `maxPipelinedRequests`, and a whole read was served in one turn, however long.
   */
  let turn = 0;
  let turnEnds = false;
  const endTurn = (): void => {
    turn += 1;
    turnEnds = false;
  };
  const currentTurn = (): number => {
    if (!turnEnds) {
      turnEnds = true;
      setImmediate(endTurn);
    }
    return turn;
  };
  const serveQueued = (): void => {
    for (const run of queued.splice(0, QUEUED_PER_TURN)) run();
    queueScheduled = queued.length > 0;
    if (queueScheduled) setImmediate(serveQueued);
  };

  /** Closes a connection that has more requests unanswered than `maxPipelinedRequests`. */
  const refusePipelined = (socket: Socket, conn: Connection): void => {
    conn.closing = true;
    logger.warn(
      { code: 'PIPELINE_LIMIT', limit: limits.maxPipelinedRequests },
      'connection closed: too many pipelined requests unanswered',
    );
    socket.destroy();
  };

  const dispatch = (req: IncomingMessage, res: ServerResponse, expectationFailed: boolean): void => {
    const socket = req.socket;
    const conn = connectionOf(socket);
    if (conn.closing) {
      // Read after the connection began to close: not answered, and nothing more is read.
      socket.pause();
      return;
    }
    conn.inFlight += 1;
    if (conn.inFlight > limits.maxPipelinedRequests) return refusePipelined(socket, conn);
    inFlight.count += 1;
    conn.open.add(res);
    res.on('close', () => settle(socket, conn, res)); // emitted once
    conn.last = { req, res };
    if (draining) res.shouldKeepAlive = false;

    if (req.httpVersionMajor !== 1) return answer(req, res, { _tag: 'VersionNotSupported' }, 'HTTP_VERSION');
    const bad = badFields(req);
    if (bad !== undefined) return answer(req, res, { _tag: 'MalformedRequest', reason: bad.reason }, bad.code);
    if (expectationFailed) return answer(req, res, { _tag: 'ExpectationFailed' }, 'EXPECTATION');
    const url = req.url ?? '/';
    if (url[0] !== '/' && url !== '*') {
      const origin = originForm(url);
      if (origin === undefined) {
        const reason = 'the request target must be a path or an absolute http(s) URI';
        return answer(req, res, { _tag: 'MalformedRequest', reason }, 'REQUEST_TARGET');
      }
      req.url = origin;
    }
    if (req.headers.upgrade !== undefined) {
      // No protocol is upgraded to here, and Node's parser drops what follows a request asking for one (the next
      // request pipelined on the connection would go unanswered): it is answered, and the connection closed.
      conn.closing = true;
      res.shouldKeepAlive = false;
    }
    if (conn.serving !== undefined) return void conn.waiting.push({ req, res });
    const now = currentTurn();
    if (conn.servedInTurn === now) return serveLater(socket, conn, req, res);
    conn.servedInTurn = now;
    serve(socket, conn, req, res);
  };

  const bodyBudget = byteBudget(limits.maxBodyBytes);
  server.on('connection', (socket: Socket) => {
    const conn = connectionOf(socket);
    sockets.add(socket);
    setBodyBudget(socket, bodyBudget);
    // Responses that never went out (their requests were waiting, or Node had queued them) close with the socket.
    socket.once('close', () => {
      sockets.delete(socket);
      conn.waiting.length = 0;
      for (const res of conn.open) settle(socket, conn, res);
    });
    // Node ends a connection after its last response (a 413, `Connection: close`) with destroySoon(), which closes
    // the socket as soon as the response is flushed; close it gracefully instead.
    socket.destroySoon = () => linger(socket, conn);
    // Node parses every request of a chunk it has read (64 KiB: over a thousand small GETs) and builds a request and
    // a response object for each, before anything can stop reading. Its per-connection hook, `parser.onIncoming`,
    // runs once a request's headers are parsed; returning 2 (as for an upgrade) makes the parser stop and drop the
    // rest of the chunk. So a connection that may not be answered further costs no more parsing. Where a Node
    // version lacks the hook, `dispatch` still closes the connection at the same point.
    const parser = (socket as Socket & { parser?: ParserHooks }).parser;
    const onIncoming = parser?.onIncoming;
    if (parser !== undefined && typeof onIncoming === 'function') {
      parser.onIncoming = (req: IncomingMessage, keepAlive: boolean): number => {
        if (!conn.closing && conn.inFlight < limits.maxPipelinedRequests) return onIncoming(req, keepAlive);
        if (!conn.closing) refusePipelined(socket, conn);
        return STOP_PARSING;
      };
    }
  });

  server.on('request', (req: IncomingMessage, res: ServerResponse) => dispatch(req, res, false));
  // `Expect: 100-continue`: served like any request, without Node's automatic `100 Continue`; the body reader sends it
  // (body.ts), so a request refused before its body is read (401, 403, 415, 413) never invites the body. Node comes
  // here when 100-continue is anywhere in the field: one that also asks for something else is 417.
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) =>
    dispatch(req, res, !expectsContinueOnly(req.headers.expect)),
  );
  // Any other expectation comes here.
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => dispatch(req, res, true));

  server.on('clientError', (err: ParserError, socket: Socket) => {
    const conn = connectionOf(socket);
    const failure = parserFailure(err, limits);
    if (failure !== undefined && conn.closing) {
      // Already closing (what follows an error, or the rest of a refused request): nothing more is answered.
      boundLinger(socket, conn);
      return;
    }
    if (failure === undefined || !socket.writable) {
      socket.destroy();
      return;
    }
    const code = err.code ?? 'HPE';
    const last = conn.last;
    if (last !== undefined && !last.req.complete) {
      // The error is in the body of the request being read (framing, or time ran out).
      if (!last.res.headersSent) return answer(last.req, last.res, failure, code);
      // That request was answered already (before its body was read): close without a second response.
      logger.info({ method: last.req.method, code }, 'connection closed: the rest of an answered request failed');
      linger(socket, conn);
      return;
    }
    conn.closing = true;
    const answerRaw = () => {
      if (socket.destroyed) return;
      refuse(socket, undefined, undefined, failure, code);
      linger(socket, conn);
    };
    // A later request is malformed while earlier ones are still being answered: answer it after them.
    if (last !== undefined && conn.inFlight > 0) last.res.once('close', answerRaw);
    else answerRaw();
  });

  // CONNECT makes Node hand the socket over, parser detached; there is no tunnel here.
  server.on('connect', (req: IncomingMessage, socket: Socket) => {
    socket.on('error', () => socket.destroy());
    const conn = connectionOf(socket);
    if (conn.inFlight > 0 || conn.closing) {
      socket.destroy();
      return;
    }
    const method = req.method ?? 'CONNECT';
    refuse(socket, req, method, { _tag: 'MethodNotImplemented', method }, 'CONNECT');
    linger(socket, conn);
  });

  // Refused connections are logged at most once a second: the first at once, those of the rest of that second in one
  // line at its end (a timer, so that a burst is counted in full even when no refusal follows).
  let dropped = 0;
  let droppedLoggedAt = 0;
  let droppedTimer: NodeJS.Timeout | undefined;
  const logDropped = (): void => {
    droppedTimer = undefined;
    if (dropped === 0) return;
    logger.warn({ dropped, limit: limits.maxConnections }, 'connections refused: at the connection limit');
    dropped = 0;
    droppedLoggedAt = Date.now();
  };
  server.on('drop', () => {
    dropped += 1;
    const since = Date.now() - droppedLoggedAt;
    if (since >= 1000) logDropped();
    else droppedTimer ??= setTimeout(logDropped, 1000 - since).unref();
  });

  return server;
};
