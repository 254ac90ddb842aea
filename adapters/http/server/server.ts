import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { Server as NetServer, type Socket } from 'node:net';
import type { Logger } from '../../../application/ports/logger.js';
import { answerFailure, type Edge } from './answer.js';
import { badFields, originForm, parserFailure, type ParserError } from './before-routing.js';
import { linger, newConnection, type Connection } from './connections.js';
import type { CorsPolicy } from './cors.js';
import { byteBudget, EdgeResponse, expectsContinueOnly, setSocketEdge } from './exchange.js';
import { refusalResponse, type ServerRefusal } from './refusals.js';
import { requestIdFrom } from './request-id.js';
import { checkingInterval, type ServerLimits } from './server-limits.js';
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
 * How often, during a shutdown, connections owing nothing are looked at: one that has owed nothing and read nothing
 * for a whole period is closed. Long enough for a request already on its way (or in the kernel, not yet read) to be
 * read, so that only connections that really are silent go.
 */
const SWEEP_MS = 100;

/** Requests each server has read and not yet answered (their response has not closed). */
const inFlightOf = new WeakMap<Server, { count: number }>();
/** How each server drains: see `drain`. */
const drainOf = new WeakMap<Server, () => Promise<void>>();

/**
 * Shuts a server from createHttpServer down without losing a request it has read: it stops accepting connections,
 * every response from now on says `Connection: close` and its connection closes after it, and a connection that owes
 * nothing and has read nothing for `SWEEP_MS` is closed (an idle keep-alive one, a browser's preconnect, one just
 * accepted whose request never came). Resolves once every connection is gone. Node's own `server.close()` is not used:
 * it closes at once every connection it deems idle, and Node 26 deems one just accepted, its request still unread in
 * the kernel, idle.
 */
export const drain = (server: Server): Promise<void> =>
  drainOf.get(server)?.() ?? new Promise((resolve) => server.close(() => resolve()));

/** Requests received by a server from createHttpServer and not yet answered or cut (their response has not closed). */
export const requestsInFlight = (server: Server): number => inFlightOf.get(server)?.count ?? 0;

/**
 * Creates the node:http server around `handler` with every limit of `limits` set, and makes every failure found
 * below the app (by Node's parser, its timeouts, or the checks here) answer in the contract's shape: the status,
 * the Error body, X-Request-Id, no-store, nosniff and `Connection: close`, plus one log line.
 *
 * What one client may hold: `maxConnections` connections; on each, `maxPipelinedRequests` requests read and
 * unanswered (the one beyond closes it; Node parses at most the rest of the read it came in, 64 KiB, before the
 * connection goes); one response at a time (see `serve`), and in total `maxUnsentBytes` of responses unread
 * (unsent.ts); and `maxBodyBytes` of request bodies being read in total (each connection's body budget, which body.ts
 * takes from).
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
    // Counts what a response leaves unsent (exchange.ts), for the unsent-bytes bound.
    ServerResponse: EdgeResponse,
  });
  server.maxConnections = limits.maxConnections;
  server.timeout = limits.idleTimeoutMs;
  // Node silently drops the headers beyond 2000 by default; the header bytes are bounded by maxHeaderSize instead.
  server.maxHeadersCount = 0;
  const inFlight = { count: 0 };
  inFlightOf.set(server, inFlight);

  const connections = new Map<Socket, Connection>();
  const connectionOf = (socket: Socket): Connection => connections.get(socket) ?? newConnection();
  let draining = false;
  drainOf.set(server, () => {
    draining = true;
    const closed = new Promise<void>((resolve) => NetServer.prototype.close.call(server, () => resolve()));
    for (const conn of connections.values()) {
      for (const res of [conn.serving, ...conn.waiting.map((w) => w.res)]) {
        if (res !== undefined && !res.headersSent) res.setHeader('Connection', 'close');
      }
    }
    // Looked at in the turn's check phase, after its poll: what the kernel holds for a connection is read by then,
    // however long the event loop was busy before the timer ran.
    const look = (): void => {
      for (const [socket, conn] of connections) {
        if (conn.unanswered === 0 && socket.bytesRead === conn.sweptAt) socket.destroy();
        conn.sweptAt = socket.bytesRead;
      }
    };
    const sweep = setInterval(() => setImmediate(look), SWEEP_MS).unref();
    return closed.finally(() => clearInterval(sweep));
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

  /**
   * Answers a request that reached the server with a failure, through its own response, and closes. The answer waits
   * for the next turn of the event loop: a body that came in the same read has been parsed by then, so that the answer
   * can close the connection at once (answer.ts).
   */
  const answer = (req: IncomingMessage, res: ServerResponse, failure: ServerRefusal, code: string): void => {
    connectionOf(req.socket).closing = true;
    setImmediate(() => refuse(res, req, req.method, failure, code));
  };

  const unsent = unsentBound(limits, logger, (res) => {
    const socket = res.socket;
    if (socket === null) return;
    connectionOf(socket).closing = true;
    socket.destroy();
  });

  /**
   * Hands a request to the app. One response per connection at a time: the next request read on the connection is
   * handed on only once this response has closed, that is once the kernel has taken all of it. So a client that does
   * not read holds at most one response in the process, however many requests it pipelined.
   */
  const serve = (req: IncomingMessage, res: ServerResponse, conn: Connection): void => {
    conn.serving = res;
    handler(req, res);
  };

  /**
   * Requests that waited behind a response on their connection are served one per turn of the event loop, after
   * whatever was read in that turn. A response the kernel takes at once closes within the turn, so each connection's
   * pipelined requests would otherwise be served back to back, and hundreds of connections pipelining large pages
   * would hold the event loop for seconds before a new connection (a probe's /healthz) is even accepted.
   */
  const queued: Array<() => void> = [];
  const serveQueued = (): void => {
    queued.shift()?.();
    if (queued.length > 0) setImmediate(serveQueued);
  };
  const serveLater = (req: IncomingMessage, res: ServerResponse, conn: Connection): void => {
    conn.serving = res;
    if (queued.push(() => !req.socket.destroyed && serve(req, res, conn)) === 1) setImmediate(serveQueued);
  };

  /**
   * Turns of the event loop, counted while requests are read: a connection has at most one request served straight
   * from the parser per turn, and a later one read in the same turn is served from the queue. A response can be done
   * before Node parses the next request of the same read (a body already read is taken at once, body.ts): without
   * this, a client pipelining small POSTs in one write would have each served and finished before the next is parsed,
   * so that none was counted against `maxPipelinedRequests`, and a whole read was served in one turn, however long.
   */
  let turn = 0;
  let turnEnds = false;
  const currentTurn = (): number => {
    if (!turnEnds) {
      turnEnds = true;
      setImmediate(() => {
        turn += 1;
        turnEnds = false;
      });
    }
    return turn;
  };

  /** A response closed (sent, or its connection gone): counted out, and the next waiting request is served. */
  const settle = (conn: Connection, res: ServerResponse): void => {
    conn.unanswered -= 1;
    inFlight.count -= 1;
    if (conn.serving !== res) return;
    conn.serving = undefined;
    const next = conn.waiting.shift();
    if (next !== undefined) serveLater(next.req, next.res, conn);
  };

  const dispatch = (req: IncomingMessage, res: ServerResponse, expectationFailed: boolean): void => {
    const socket = req.socket;
    const conn = connections.get(socket);
    // Read after the connection began to close (or after it closed): not answered.
    if (conn === undefined || conn.closing) return;
    conn.unanswered += 1;
    if (conn.unanswered > limits.maxPipelinedRequests) {
      conn.unanswered -= 1;
      conn.closing = true;
      logger.warn(
        { code: 'PIPELINE_LIMIT', limit: limits.maxPipelinedRequests },
        'connection closed: too many pipelined requests unanswered',
      );
      socket.destroy();
      return;
    }
    inFlight.count += 1;
    res.once('close', () => settle(conn, res));
    conn.last = { req, res };
    if (draining) res.setHeader('Connection', 'close');

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
      res.setHeader('Connection', 'close');
    }
    if (conn.serving !== undefined) return void conn.waiting.push({ req, res });
    const now = currentTurn();
    if (conn.servedInTurn === now) return serveLater(req, res, conn);
    conn.servedInTurn = now;
    serve(req, res, conn);
  };

  const bodies = byteBudget(limits.maxBodyBytes);
  const closeAfter = (res: ServerResponse): void => {
    const socket = res.socket;
    if (socket === null) return;
    const conn = connectionOf(socket);
    conn.closing = true;
    res.once('finish', () => linger(socket, conn, limits));
  };
  server.on('connection', (socket: Socket) => {
    const conn = newConnection();
    connections.set(socket, conn);
    setSocketEdge(socket, { bodies, unsent, closeAfter });
    socket.once('close', () => {
      connections.delete(socket);
      // Requests that waited behind a response never reached the app, and Node emits no 'close' for their responses.
      inFlight.count -= conn.waiting.length;
      conn.waiting.length = 0;
    });
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
    // Already closing (what follows an error, or the rest of a refused request): nothing more is answered.
    if (failure !== undefined && conn.closing && !socket.destroyed) return;
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
      linger(socket, conn, limits);
      return;
    }
    conn.closing = true;
    const answerRaw = () => {
      if (socket.destroyed) return;
      refuse(socket, undefined, undefined, failure, code);
      linger(socket, conn, limits);
    };
    // A later request is malformed while earlier ones are still being answered: answer it after them.
    if (last !== undefined && conn.unanswered > 0) last.res.once('close', answerRaw);
    else answerRaw();
  });

  // CONNECT makes Node hand the socket over, parser detached; there is no tunnel here.
  server.on('connect', (req: IncomingMessage, socket: Socket) => {
    socket.on('error', () => socket.destroy());
    const conn = connectionOf(socket);
    if (conn.unanswered > 0 || conn.closing) {
      socket.destroy();
      return;
    }
    const method = req.method ?? 'CONNECT';
    refuse(socket, req, method, { _tag: 'MethodNotImplemented', method }, 'CONNECT');
    linger(socket, conn, limits);
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
