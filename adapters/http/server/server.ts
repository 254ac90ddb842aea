import { Server, type IncomingMessage, type ServerOptions, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from '../../../application/ports/logger.js';
import { answerFailure, logRequest, refusal, type Edge, type FailureResponse } from './answer.js';
import { hostMemo, parserFailure, refusalOf, type ParserError } from './before-routing.js';
import { readEarly } from './body.js';
import { closeIdle, endAfterBody, linger, newConnection, type Connection } from './connections.js';
import type { CorsPolicy } from './cors.js';
import { byteBudget, EdgeRequest, expectsContinueOnly, type ServerEdge } from './exchange.js';
import { requestIdFrom } from './request-id.js';
import { checkingInterval, type ServerLimits } from './server-limits.js';
import { shutdown, type Shutdown } from './shutdown.js';
import { turns, type Turns } from './turns.js';
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
  /** The largest request body a route reads (BODY_LIMIT): what a request that waits its turn may have read early. */
  readonly bodyLimit?: number;
}

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/** node:http's server with what the edge adds: a shutdown that loses no request read, and the requests in flight. */
export class EdgeServer extends Server<typeof IncomingMessage, typeof ServerResponse> {
  readonly #controls: { readonly drain: () => Promise<void>; readonly inFlight: () => number };
  constructor(
    options: ServerOptions<typeof IncomingMessage, typeof ServerResponse>,
    controls: { readonly drain: () => Promise<void>; readonly inFlight: () => number },
  ) {
    super(options);
    this.#controls = controls;
  }
  /** Stops accepting and resolves once every connection is gone, every request read answered (shutdown.ts). */
  drain(): Promise<void> {
    return this.#controls.drain();
  }
  /** Requests received and not yet answered or cut (their response has not closed, or they wait their turn). */
  inFlight(): number {
    return this.#controls.inFlight();
  }
}

/** What the units of one server share: its connections, its refusals, its turns and its shutdown. */
interface EdgeState {
  readonly logger: Logger;
  readonly limits: ServerLimits;
  readonly connections: Map<Socket, Connection>;
  readonly inFlight: { count: number };
  /** Answers a refusal on the request's response, or on the bare socket when Node has none, and counts it. */
  readonly refuse: (
    to: ServerResponse | Socket,
    req: IncomingMessage | undefined,
    f: FailureResponse,
    code: string,
  ) => void;
  /** A refusal of a request that was read, in the next turn: a body that came in the same read is parsed by then. */
  readonly answer: (
    conn: Connection,
    req: IncomingMessage,
    res: ServerResponse,
    f: FailureResponse,
    code: string,
  ) => void;
  /** A request read that will not be answered (its connection closes): logged as nginx's 499, with its reason. */
  readonly unanswered: (req: IncomingMessage, code: string) => void;
}

const edgeState = (deps: HttpServerDeps): EdgeState => {
  const { logger, refused, cors } = deps;
  const edge: Edge = { logger, cors };
  const refuse: EdgeState['refuse'] = (to, req, f, code) => {
    const asker = { id: requestIdFrom(req?.headers['x-request-id']), origin: req?.headers.origin };
    const status = answerFailure(edge, to, asker, f, { method: req?.method, code });
    refused?.(req?.method, status);
  };
  return {
    logger,
    limits: deps.limits,
    connections: new Map(),
    inFlight: { count: 0 },
    refuse,
    answer: (conn, req, res, f, code) => {
      conn.closing = true;
      setImmediate(() => refuse(res, req, f, code));
    },
    unanswered: (req, code) =>
      logRequest(logger, { reqId: requestIdFrom(req.headers['x-request-id']), method: req.method, status: 499, code }),
  };
};

/**
 * The node:http server around `handler` with every limit set; a failure below the app answers in the contract's shape
 * and closes the connection. What a client can make the process hold, and where each bound is kept, is the table in
 * docs/operations.md: connections (maxConnections), requests waiting their turn (maxPipelinedRequests, turns.ts),
 * header fields (maxHeaderSize, maxHeaderFields), body bytes (body.ts, maxBodyBytes), unsent bytes (unsent.ts).
 */
export const createHttpServer = (handler: Handler, deps: HttpServerDeps): EdgeServer => {
  const { limits, probes = [], bodyLimit = 0 } = deps;
  const state = edgeState(deps);
  const { connections, inFlight } = state;
  const shut = (res: ServerResponse): void => {
    const conn = res.socket === null ? undefined : connections.get(res.socket);
    if (conn !== undefined) conn.closing = true;
    res.socket?.destroy();
  };
  const unsent = unsentBound(limits, state.logger, shut, () => queue.room());
  const queue = turns(handler, unsent, (req, res) => {
    if (req instanceof EdgeRequest && bodyLimit > 0) readEarly(req, res, bodyLimit);
  });
  const serverEdge: ServerEdge = {
    bodies: byteBudget(limits.maxBodyBytes),
    unsent,
    endAfterBody: (res, body) => endAfterBody(res, body, limits),
  };
  class Request extends EdgeRequest {
    override get edge(): ServerEdge {
      return serverEdge;
    }
  }
  // `optimizeEmptyRequests` (Node 24.12 and 26) is not in the @types/node this project builds with.
  const options: ServerOptions<typeof IncomingMessage, typeof ServerResponse> & { optimizeEmptyRequests: boolean } = {
    maxHeaderSize: limits.maxHeaderSize,
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    connectionsCheckingInterval: checkingInterval(limits),
    // Checked here instead, so that the 400 carries the Error body.
    requireHostHeader: false,
    // A request without Content-Length or Transfer-Encoding has no body: its stream starts ended, so that it costs
    // no stream events (Node 24.12 and 26; older 24s ignore the option and emit them).
    optimizeEmptyRequests: true,
    IncomingMessage: Request,
    ServerResponse: EdgeResponse,
  };
  const server = new EdgeServer(options, { drain: () => down.drain(), inFlight: () => inFlight.count });
  const down = shutdown(server, connections);
  server.maxConnections = limits.maxConnections;
  // Node keeps this many fields of a request and drops the rest: one more than the bound, so that it can be refused.
  server.maxHeadersCount = limits.maxHeaderFields + 1;
  const dispatch = dispatcher(state, queue, down, probes);
  server.on('connection', (socket: Socket) => track(state, socket));
  server.once(
    'close',
    closeIdle(connections, limits.idleTimeoutMs, (conn) => idle(state, conn)),
  );
  server.on('request', dispatch);
  // `Expect: 100-continue` is served like any request, without Node's automatic `100 Continue`: body.ts sends it, so
  // a request refused before its body is read never invites the body. One that also asks for more is 417.
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) =>
    dispatch(req, res, !expectsContinueOnly(req.headers.expect)),
  );
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => dispatch(req, res, true));
  server.on('clientError', clientErrors(state));
  // CONNECT makes Node hand the socket over, parser detached; there is no tunnel here.
  server.on('connect', (req: IncomingMessage, socket: Socket) => {
    socket.on('error', () => socket.destroy());
    const conn = connections.get(socket) ?? newConnection(socket);
    if (conn.unanswered > 0 || conn.closing) return void socket.destroy();
    state.refuse(socket, req, refusal(501, `method ${req.method} is not supported by this server`), 'CONNECT');
    linger(conn, limits);
  });
  reportDrops(server, state.logger, limits.maxConnections);
  return server;
};

/** Keeps a connection's state while it is open; what it leaves unanswered when it closes is logged. */
const track = ({ connections, inFlight, unanswered, logger }: EdgeState, socket: Socket): void => {
  const conn = newConnection(socket);
  connections.set(socket, conn);
  socket.once('close', () => {
    connections.delete(socket);
    // Requests that waited behind a response never reached the app; Node emits no 'close' for their responses.
    inFlight.count -= conn.waiting.length;
    for (const { req } of conn.waiting.splice(0)) unanswered(req, 'CONNECTION_CLOSED');
    if (conn.ignored > 0) {
      logger.info(
        { code: 'CLOSED_UNREAD', requests: conn.ignored },
        'requests read after the connection began to close',
      );
    }
  });
};

const idle = ({ logger, limits }: EdgeState, conn: Connection): void => {
  conn.closing = true;
  logger.info({ code: 'IDLE', timeoutMs: limits.idleTimeoutMs }, 'connection closed: no byte moved');
};

/** The server's 'request': counted, refused below the app when it must be, else served in its turn (turns.ts). */
const dispatcher =
  (state: EdgeState, queue: Turns, down: Shutdown, probes: readonly string[], hostOk = hostMemo()) =>
  (req: IncomingMessage, res: ServerResponse, expectationFailed = false): void => {
    const { limits, inFlight } = state;
    const conn = state.connections.get(req.socket);
    if (conn === undefined) return;
    if (conn.closing) return void (conn.ignored += 1);
    if (conn.unanswered >= limits.maxPipelinedRequests) {
      conn.closing = true;
      state.logger.warn(
        { code: 'PIPELINE_LIMIT', limit: limits.maxPipelinedRequests },
        'connection closed: too many pipelined requests unanswered',
      );
      return void req.socket.destroy();
    }
    if (!down.admit(conn, res)) return state.unanswered(req, 'SHUTDOWN');
    conn.unanswered += 1;
    inFlight.count += 1;
    // Closed (sent, or its connection gone): counted out, and the next waiting request is served.
    res.once('close', () => {
      conn.unanswered -= 1;
      inFlight.count -= 1;
      queue.closed(conn, res);
    });
    conn.last = { req, res };
    const refusing = refusalOf(req, limits, expectationFailed, hostOk);
    if (refusing !== undefined) return state.answer(conn, req, res, refusing.failure, refusing.code);
    if (req.headers.upgrade !== undefined) {
      // Nothing is upgraded to, and Node's parser drops what follows such a request: answered, then closed.
      conn.closing = true;
      res.setHeader('Connection', 'close');
    }
    queue.admit(conn, req, res, probes.includes((req.url ?? '').split('?', 1)[0] ?? ''));
  };

/** The server's 'clientError': what Node's parser refused, answered in the contract's shape when it still can be. */
const clientErrors =
  (state: EdgeState) =>
  (err: ParserError, socket: Socket): void => {
    const { limits } = state;
    const conn = state.connections.get(socket) ?? newConnection(socket);
    const failure = parserFailure(err, limits);
    // Already closing (what follows an error, or the rest of a refused request): nothing more is answered.
    if (failure !== undefined && conn.closing && !socket.destroyed) return;
    if (failure === undefined || !socket.writable) return void socket.destroy();
    const code = err.code ?? 'HPE';
    const last = conn.last;
    if (last !== undefined && !last.req.complete) {
      // In the body of the request being read (framing, or time ran out).
      if (!last.res.headersSent) return state.answer(conn, last.req, last.res, failure, code);
      state.logger.info({ method: last.req.method, code }, 'connection closed: the rest of an answered request failed');
      return linger(conn, limits);
    }
    conn.closing = true;
    const answerRaw = () => {
      if (socket.destroyed) return;
      state.refuse(socket, undefined, failure, code);
      linger(conn, limits);
    };
    // A later request is malformed while earlier ones are still being answered: answered after them.
    if (last !== undefined && conn.unanswered > 0) last.res.once('close', answerRaw);
    else answerRaw();
  };

/** Connections refused at the limit are logged at most once a second: the first at once, the rest at its end. */
const reportDrops = (server: Server, logger: Logger, limit: number): void => {
  let dropped = 0;
  let window: NodeJS.Timeout | undefined;
  const report = (): void => {
    if (dropped === 0) return void (window = undefined);
    logger.warn({ dropped, limit }, 'connections refused: at the connection limit');
    dropped = 0;
    window = setTimeout(report, 1000).unref();
  };
  server.on('drop', () => {
    dropped += 1;
    if (window === undefined) report();
  });
};
