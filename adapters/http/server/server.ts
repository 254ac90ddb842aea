import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { Server as NetServer, type Socket } from 'node:net';
import type { Logger } from '../../../application/ports/logger.js';
import { answerFailure, malformed, refusal, VERSION_NOT_SUPPORTED, type Edge, type FailureResponse } from './answer.js';
import { badFields, originForm, parserFailure, type ParserError } from './before-routing.js';
import { linger, newConnection, type Connection } from './connections.js';
import type { CorsPolicy } from './cors.js';
import { byteBudget, edges, expectsContinueOnly } from './exchange.js';
import { requestIdFrom } from './request-id.js';
import { checkingInterval, type ServerLimits } from './server-limits.js';
import { EdgeResponse, unsentBound } from './unsent.js';

export { defaultServerLimits, type ServerLimits } from './server-limits.js';
export { originForm } from './before-routing.js';
export { sharedBody } from './unsent.js';

export interface HttpServerDeps {
  readonly logger: Logger;
  readonly limits: ServerLimits;
  /** Told of every request answered here, below the app. */
  readonly refused?: ((method: string | undefined, status: number) => void) | undefined;
  /** The app's CORS fields, on the answers here too. */
  readonly cors?: CorsPolicy | undefined;
  /** Paths answered in a few bytes (probes): begun even past the unsent bound, never held behind unread responses. */
  readonly probes?: readonly string[];
}

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/** How long a connection that owes nothing must read nothing, during a shutdown, to be closed. */
const SWEEP_MS = 100;
const TARGET = 'the request target must be a path or an absolute http(s) URI';

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
 * The node:http server around `handler` with every limit set; a failure below the app answers in the contract's shape
 * and closes the connection. A client holds at most `maxConnections` connections, `maxPipelinedRequests` unanswered
 * requests and one response on each, and in total `maxUnsentBytes` unread and `maxBodyBytes` of bodies being read.
 */
export const createHttpServer = (handler: Handler, deps: HttpServerDeps): Server => {
  const { logger, limits, refused, cors, probes = [] } = deps;
  const server = createServer({
    maxHeaderSize: limits.maxHeaderSize,
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
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
    failure: FailureResponse,
    code: string,
  ): void => {
    const asker = { id: requestIdFrom(req?.headers['x-request-id']), origin: req?.headers.origin };
    const status = answerFailure(edge, to, asker, failure, { method: req?.method, code });
    refused?.(req?.method, status);
  };

  /** A refusal of a request that was read, in the next turn: a body that came in the same read is parsed by then. */
  const answer = (req: IncomingMessage, res: ServerResponse, failure: FailureResponse, code: string): void => {
    connectionOf(req.socket).closing = true;
    setImmediate(() => refuse(res, req, failure, code));
  };

  /**
   * One response per connection at a time: the next request read on it is handed on once this response has closed
   * (the kernel took all of it), so a client that does not read holds one response, however many it pipelined.
   * Requests that waited are served one per turn of the event loop, after what that turn read: served back to back,
   * hundreds of connections pipelining large pages would hold the loop for seconds. While the unsent bound is full,
   * none is, and only probes are served straight from the parser: each response is counted before the next begins.
   */
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
  const shut = (res: ServerResponse): void => {
    if (res.socket === null) return;
    connectionOf(res.socket).closing = true;
    res.socket.destroy();
  };
  const unsent = unsentBound(limits, logger, shut, schedule);

  // At most one request per connection and turn is served straight from the parser, the rest wait in the queue: a
  // response can be done before Node parses the next request of the read (body.ts), so that they would not count.
  let turn = 0;
  let turnEnds = false;
  const nextTurn = (): void => {
    turn += 1;
    turnEnds = false;
  };

  const dispatch = (req: IncomingMessage, res: ServerResponse, expectationFailed = false): void => {
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
    // Closed (sent, or its connection gone): counted out, and the next waiting request is served.
    res.once('close', () => {
      conn.unanswered -= 1;
      inFlight.count -= 1;
      if (conn.serving !== res) return;
      conn.serving = undefined;
      const next = conn.waiting.shift();
      if (next !== undefined) serveLater(next.req, next.res, conn);
    });
    conn.last = { req, res };
    if (draining) res.setHeader('Connection', 'close');

    if (req.httpVersionMajor !== 1) return answer(req, res, VERSION_NOT_SUPPORTED, 'HTTP_VERSION');
    const bad = badFields(req);
    if (bad) return answer(req, res, malformed(bad.reason), bad.code);
    if (expectationFailed)
      return answer(req, res, refusal(417, 'expect: only "100-continue" is supported'), 'EXPECTATION');
    const url = req.url ?? '/';
    if (url[0] !== '/' && url !== '*') {
      const origin = originForm(url);
      if (origin === undefined) return answer(req, res, malformed(TARGET), 'REQUEST_TARGET');
      req.url = origin;
    }
    if (req.headers.upgrade !== undefined) {
      // Nothing is upgraded to, and Node's parser drops what follows such a request: answered, then closed.
      conn.closing = true;
      res.setHeader('Connection', 'close');
    }
    if (conn.serving !== undefined) return void conn.waiting.push({ req, res });
    if (!turnEnds) {
      turnEnds = true;
      setImmediate(nextTurn);
    }
    const waits = unsent.full() && !probes.includes((req.url ?? url).split('?', 1)[0] ?? '');
    if (conn.servedInTurn === turn || waits) return serveLater(req, res, conn);
    conn.servedInTurn = turn;
    conn.serving = res;
    handler(req, res);
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
    edges.set(socket, { bodies, unsent, closeAfter });
    socket.once('close', () => {
      connections.delete(socket);
      // Requests that waited behind a response never reached the app; Node emits no 'close' for their responses.
      inFlight.count -= conn.waiting.length;
      conn.waiting.length = 0;
    });
  });

  server.on('request', dispatch);
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
    refuse(socket, req, refusal(501, `method ${req.method} is not supported by this server`), 'CONNECT');
    linger(socket, conn, limits);
  });

  // Refused connections are logged at most once a second: the first at once, the rest of that second at its end.
  let dropped = 0;
  let window: NodeJS.Timeout | undefined;
  const report = (): void => {
    if (dropped === 0) return void (window = undefined);
    logger.warn({ dropped, limit: limits.maxConnections }, 'connections refused: at the connection limit');
    dropped = 0;
    window = setTimeout(report, 1000).unref();
  };
  server.on('drop', () => {
    dropped += 1;
    if (window === undefined) report();
  });

  return server;
};
