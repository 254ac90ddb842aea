import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { Server as NetServer, type Socket } from 'node:net';
import type { Logger } from '../../../application/ports/logger.js';
import { answerFailure, type Edge } from './answer.js';
import { badFields, originForm, parserFailure, type ParserError } from './before-routing.js';
import { linger, newConnection, type Connection } from './connections.js';
import type { CorsPolicy } from './cors.js';
import { byteBudget, expectsContinueOnly, setSocketEdge } from './exchange.js';
import { refusalResponse, type ServerRefusal } from './refusals.js';
import { requestIdFrom } from './request-id.js';
import { checkingInterval, type ServerLimits } from './server-limits.js';
import { EdgeResponse, unsentBound } from './unsent.js';

export { defaultServerLimits, type ServerLimits } from './server-limits.js';
export { originForm } from './before-routing.js';
export { sharedBody } from './unsent.js';

export interface HttpServerDeps {
  readonly logger: Logger;
  readonly limits: ServerLimits;
  /** Told of every request answered here, below the app (for the request counter). */
  readonly refused?: ((method: string | undefined, status: number) => void) | undefined;
  /** The CORS fields of the app's responses, on those answered here too (none when CORS is off). */
  readonly cors?: CorsPolicy | undefined;
}

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/**
 * During a shutdown, a connection that owes nothing and has read nothing for a whole period is closed: long enough
 * for a request already on its way (or unread in the kernel) to be read.
 */
const SWEEP_MS = 100;

const inFlightOf = new WeakMap<Server, { count: number }>();
const drainOf = new WeakMap<Server, () => Promise<void>>();

/**
 * Shuts a server from createHttpServer down without losing a request it has read: no new connection, every response
 * from now on says `Connection: close`, and a connection that owes nothing and read nothing for `SWEEP_MS` is closed.
 * Resolves once every connection is gone. Not `server.close()`: on Node 26 it closes at once a connection just
 * accepted whose request is still unread in the kernel.
 */
export const drain = (server: Server): Promise<void> =>
  drainOf.get(server)?.() ?? new Promise((resolve) => server.close(() => resolve()));

/** Requests received by a server from createHttpServer and not yet answered or cut (their response has not closed). */
export const requestsInFlight = (server: Server): number => inFlightOf.get(server)?.count ?? 0;

/**
 * The node:http server around `handler` with every limit of `limits` set; every failure found below the app (Node's
 * parser, its timeouts, the checks here) answers in the contract's shape and closes the connection.
 *
 * What one client may hold: `maxConnections` connections; on each, `maxPipelinedRequests` requests read and
 * unanswered (the one beyond closes it) and one response at a time (`serve`); in total `maxUnsentBytes` of responses
 * unread (unsent.ts) and `maxBodyBytes` of request bodies being read (body.ts).
 */
export const createHttpServer = (handler: Handler, { logger, limits, refused, cors }: HttpServerDeps): Server => {
  const server = createServer({
    maxHeaderSize: limits.maxHeaderSize,
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    // Node's default, 30 s, would let a 10 s timeout run to 40 s.
    connectionsCheckingInterval: checkingInterval(limits),
    // Checked here instead, so that the 400 carries the Error body.
    requireHostHeader: false,
    ServerResponse: EdgeResponse,
  });
  server.maxConnections = limits.maxConnections;
  server.timeout = limits.idleTimeoutMs;
  // Node silently drops the headers beyond 2000 by default; maxHeaderSize bounds them instead.
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
    // In the check phase, after the turn's poll: what the kernel holds for a connection has been read by then.
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
  /** Answers a refusal on the request's response, or on the bare socket when Node has none, and counts it. */
  const refuse = (
    to: ServerResponse | Socket,
    req: IncomingMessage | undefined,
    failure: ServerRefusal,
    code: string,
  ): void => {
    const asker = { id: requestIdFrom(req?.headers['x-request-id']), origin: req?.headers.origin };
    const status = answerFailure(edge, to, asker, refusalResponse(failure), { method: req?.method, code });
    refused?.(req?.method, status);
  };

  /** A refusal of a request that was read, in the next turn: a body that came in the same read is parsed by then. */
  const answer = (req: IncomingMessage, res: ServerResponse, failure: ServerRefusal, code: string): void => {
    connectionOf(req.socket).closing = true;
    setImmediate(() => refuse(res, req, failure, code));
  };

  const unsent = unsentBound(limits, logger, (res) => {
    if (res.socket === null) return;
    connectionOf(res.socket).closing = true;
    res.socket.destroy();
  });

  /**
   * One response per connection at a time: the next request read on it is handed on once this response has closed
   * (the kernel took all of it), so a client that does not read holds one response, however many it pipelined.
   */
  const serve = (req: IncomingMessage, res: ServerResponse, conn: Connection): void => {
    conn.serving = res;
    handler(req, res);
  };

  /**
   * Requests that waited on their connection are served one per turn of the event loop, after what that turn read:
   * served back to back, hundreds of connections pipelining large pages would hold the loop for seconds.
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
   * A connection has at most one request served straight from the parser per turn; a later one of the same read
   * waits in the queue. A response can be done before Node parses the next request of the read (body.ts takes a
   * buffered body at once), so small pipelined POSTs would otherwise never count against `maxPipelinedRequests`.
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
    // Read after the connection began to close: not answered.
    if (conn === undefined || conn.closing) return;
    if (conn.unanswered >= limits.maxPipelinedRequests) {
      conn.closing = true;
      logger.warn(
        { code: 'PIPELINE_LIMIT', limit: limits.maxPipelinedRequests },
        'connection closed: too many pipelined requests unanswered',
      );
      socket.destroy();
      return;
    }
    conn.unanswered += 1;
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
      // Nothing is upgraded to, and Node's parser drops what follows such a request: answered, then closed.
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
      // Requests that waited behind a response never reached the app; Node emits no 'close' for their responses.
      inFlight.count -= conn.waiting.length;
      conn.waiting.length = 0;
    });
  });

  server.on('request', (req: IncomingMessage, res: ServerResponse) => dispatch(req, res, false));
  // `Expect: 100-continue` is served like any request, without Node's automatic `100 Continue`: body.ts sends it, so
  // a request refused before its body is read never invites the body. One that also asks for more is 417.
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) =>
    dispatch(req, res, !expectsContinueOnly(req.headers.expect)),
  );
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => dispatch(req, res, true));

  server.on('clientError', (err: ParserError, socket: Socket) => {
    const conn = connectionOf(socket);
    const failure = parserFailure(err, limits);
    // Already closing (what follows an error, or the rest of a refused request): nothing more is answered.
    if (failure !== undefined && conn.closing && !socket.destroyed) return;
    if (failure === undefined || !socket.writable) return void socket.destroy();
    const code = err.code ?? 'HPE';
    const last = conn.last;
    if (last !== undefined && !last.req.complete) {
      // In the body of the request being read (framing, or time ran out).
      if (!last.res.headersSent) return answer(last.req, last.res, failure, code);
      logger.info({ method: last.req.method, code }, 'connection closed: the rest of an answered request failed');
      return linger(socket, conn, limits);
    }
    conn.closing = true;
    const answerRaw = () => {
      if (socket.destroyed) return;
      refuse(socket, undefined, failure, code);
      linger(socket, conn, limits);
    };
    // A later request is malformed while earlier ones are still being answered: answered after them.
    if (last !== undefined && conn.unanswered > 0) last.res.once('close', answerRaw);
    else answerRaw();
  });

  // CONNECT makes Node hand the socket over, parser detached; there is no tunnel here.
  server.on('connect', (req: IncomingMessage, socket: Socket) => {
    socket.on('error', () => socket.destroy());
    const conn = connectionOf(socket);
    if (conn.unanswered > 0 || conn.closing) return void socket.destroy();
    refuse(socket, req, { _tag: 'MethodNotImplemented', method: req.method ?? 'CONNECT' }, 'CONNECT');
    linger(socket, conn, limits);
  });

  // Refused connections are logged at most once a second, counted in full.
  let dropped = 0;
  server.on('drop', () => {
    if (dropped++ > 0) return;
    setTimeout(() => {
      logger.warn({ dropped, limit: limits.maxConnections }, 'connections refused: at the connection limit');
      dropped = 0;
    }, 1000).unref();
  });

  return server;
};
