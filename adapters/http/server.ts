import { createServer, STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from '../../application/ports/logger.js';
import { toResponse, type HttpFailure } from './failures.js';
import { requestIdFrom } from './request-id.js';

/**
 * What one client may hold of the server. Node's HTTP server bounds some of it (header bytes, header and request
 * timeouts, keep-alive) and this module sets each explicitly; the rest (connections, pipelined requests, a graceful
 * close) it adds.
 */
export interface ServerLimits {
  /** Open connections at once; a connection beyond it is closed as soon as it is accepted. */
  readonly maxConnections: number;
  /** Requests read on one connection and not yet answered; the one beyond it closes the connection. */
  readonly maxPipelinedRequests: number;
  /** Bytes of the request line and headers together (Node's `maxHeaderSize`); more is 431. */
  readonly maxHeaderSize: number;
  /** Time for the request line and headers to arrive (Node's `headersTimeout`); past it, 408. */
  readonly headersTimeoutMs: number;
  /** Time for the whole request, body included, to arrive (Node's `requestTimeout`); past it, 408. */
  readonly requestTimeoutMs: number;
  /** An idle keep-alive connection is closed after this long (Node's `keepAliveTimeout`). */
  readonly keepAliveTimeoutMs: number;
  /** A connection on which nothing moves either way while a request is open (a client that stops reading) is closed. */
  readonly idleTimeoutMs: number;
  /**
   * After the last response of a connection, what the client still sends is read and discarded for up to `lingerMs`
   * and `lingerBytes`, so that closing does not reset the connection before the client has read the response.
   */
  readonly lingerMs: number;
  readonly lingerBytes: number;
}

export const defaultServerLimits: ServerLimits = {
  maxConnections: 1000,
  maxPipelinedRequests: 16,
  maxHeaderSize: 16384,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
  idleTimeoutMs: 60_000,
  lingerMs: 2_000,
  lingerBytes: 1024 * 1024,
};

export interface HttpServerDeps {
  readonly logger: Logger;
  readonly limits: ServerLimits;
}

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/** What the server keeps about one connection. */
interface Connection {
  /** Requests handed to the app (or answered here) whose response has not closed yet. */
  inFlight: number;
  /** The latest request read on this connection, with its response. */
  last: { readonly req: IncomingMessage; readonly res: ServerResponse } | undefined;
  /** The connection is going away: nothing more read on it is answered. */
  closing: boolean;
  lingering: boolean;
  /** `socket.bytesRead` when lingering began. */
  lingerFrom: number;
}

/**
 * Node's HTTP server offers no public hook for three things done here, so this module leans on three internals that
 * have been stable for years, each pinned by a test in test/edge: the per-connection `parser.onIncoming` (to stop
 * parsing a connection that is closing), `socket.destroySoon()` (what Node calls to close after a last response),
 * and the parser taking its bytes from the socket's 'data' listener once one is added (to stop parsing while the
 * connection lingers).
 */
interface ParserHooks {
  onIncoming?: (req: IncomingMessage, keepAlive: boolean) => number;
}
/** What `parser.onIncoming` returns to make llhttp stop at the end of the current request's headers. */
const STOP_PARSING = 2;

type ParserError = Error & { readonly code?: string; readonly reason?: unknown };

const JSON_TYPE = 'application/json; charset=utf-8';
const NOT_PRINTABLE = /[^\x20-\x7e]/g;

/**
 * The origin-form (path and query) of an absolute-form request target such as `http://host:port/path?query`
 * (RFC 9112 §3.2.2); undefined when the target is not an http or https URI with an authority.
 */
export const originForm = (target: string): string | undefined => {
  const sep = target.indexOf('://');
  if (sep <= 0) return undefined;
  const scheme = target.slice(0, sep).toLowerCase();
  if (scheme !== 'http' && scheme !== 'https') return undefined;
  const authority = sep + 3;
  let end = authority;
  while (end < target.length && target[end] !== '/' && target[end] !== '?') end += 1;
  if (end === authority) return undefined;
  const rest = target.slice(end);
  return rest === '' || rest[0] === '?' ? `/${rest}` : rest;
};

/** The request is HTTP/1.1 without exactly one Host field (RFC 9112 §3.2 asks for a 400), or HTTP/1.0 with two. */
const badHost = (req: IncomingMessage): boolean => {
  const raw = req.rawHeaders;
  let hosts = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    if (name.length === 4 && name.toLowerCase() === 'host') hosts += 1;
  }
  return hosts > 1 || (hosts === 0 && req.httpVersionMinor >= 1);
};

/** The failure a parser error answers with; undefined for socket errors, which cannot be answered. */
const parserFailure = (err: ParserError, limits: ServerLimits): HttpFailure | undefined => {
  switch (err.code) {
    case 'HPE_HEADER_OVERFLOW':
      return { _tag: 'HeadersTooLarge', limit: limits.maxHeaderSize };
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return { _tag: 'RequestTimeout', headersMs: limits.headersTimeoutMs, requestMs: limits.requestTimeoutMs };
    case 'HPE_PAUSED_H2_UPGRADE': // the HTTP/2 connection preface, "PRI * HTTP/2.0"
      return { _tag: 'VersionNotSupported' };
    case 'HPE_INVALID_EOF_STATE':
      return { _tag: 'MalformedRequest', reason: 'the connection ended before the request was complete' };
    default: {
      if (err.code === undefined || !err.code.startsWith('HPE_')) return undefined;
      // llhttp's reason is one of its own constant sentences ("Duplicate Content-Length"), never client bytes.
      const reason = typeof err.reason === 'string' ? err.reason.replace(NOT_PRINTABLE, '').slice(0, 100) : '';
      return {
        _tag: 'MalformedRequest',
        reason: reason === '' ? 'malformed HTTP/1.1' : `malformed HTTP/1.1 (${reason})`,
      };
    }
  }
};

/** Requests each server has handed on (or answered) whose response has not closed yet. */
const inFlightOf = new WeakMap<Server, { count: number }>();

/**
 * Requests received by a server from createHttpServer and not yet answered or cut (their response has not closed),
 * counted where the server already follows each response, so that no second listener per request is needed.
 */
export const requestsInFlight = (server: Server): number => inFlightOf.get(server)?.count ?? 0;

/** A quarter of the shorter timeout, between 25 ms and 1 s. */
const checkingInterval = ({ headersTimeoutMs, requestTimeoutMs }: ServerLimits): number =>
  Math.min(1000, Math.max(25, Math.floor(Math.min(headersTimeoutMs, requestTimeoutMs) / 4)));

/**
 * Creates the node:http server around `handler` with every limit of `limits` set, and makes every failure found
 * below the app (by Node's parser, its timeouts, or the checks here) answer in the contract's shape: the status,
 * the Error body, X-Request-Id, no-store, nosniff and `Connection: close`, plus one log line.
 *
 * Memory per connection is bounded by closing a connection that has more than `maxPipelinedRequests` requests
 * unanswered, and by stopping the parser there: Node otherwise parses every request of a chunk it has read (up to
 * 64 KiB, over a thousand small GETs) into objects before its own backpressure can stop reading, so pausing alone
 * would not bound it. The number of connections is bounded by `maxConnections`.
 */
export const createHttpServer = (handler: Handler, { logger, limits }: HttpServerDeps): Server => {
  const server = createServer({
    maxHeaderSize: limits.maxHeaderSize,
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    // How often Node checks the two timeouts: its default, 30 s, would let a 10 s timeout run to 40 s.
    connectionsCheckingInterval: checkingInterval(limits),
    // Checked here instead, so that the 400 carries the Error body.
    requireHostHeader: false,
  });
  server.maxConnections = limits.maxConnections;
  server.timeout = limits.idleTimeoutMs;
  // Node silently drops the headers beyond 2000 by default; the header bytes are bounded by maxHeaderSize instead.
  server.maxHeadersCount = 0;
  const inFlight = { count: 0 };
  inFlightOf.set(server, inFlight);

  const connections = new WeakMap<Socket, Connection>();
  const connectionOf = (socket: Socket): Connection => {
    let conn = connections.get(socket);
    if (conn === undefined) {
      conn = { inFlight: 0, last: undefined, closing: false, lingering: false, lingerFrom: 0 };
      connections.set(socket, conn);
    }
    return conn;
  };

  const logAnswered = (reqId: string, method: string | undefined, status: number, code: string) =>
    logger.info({ reqId, method, status, code }, 'request');

  const contractHeaders = (reqId: string, headers: Readonly<Record<string, string>> | undefined, body: string) => {
    const fields: string[] = ['x-request-id', reqId, 'cache-control', 'no-store', 'x-content-type-options', 'nosniff'];
    if (headers !== undefined) for (const name in headers) fields.push(name, headers[name] as string);
    fields.push('content-type', JSON_TYPE, 'content-length', String(Buffer.byteLength(body)));
    return fields;
  };

  /** Answers a request that reached the server with a failure, through its own response, and closes. */
  const answer = (req: IncomingMessage, res: ServerResponse, failure: HttpFailure, code: string): void => {
    connectionOf(req.socket).closing = true;
    const reqId = requestIdFrom(req.headers['x-request-id']);
    const { status, message, headers } = toResponse(failure);
    const body = JSON.stringify({ error: status, message });
    res.writeHead(status, contractHeaders(reqId, headers, body)).end(body);
    logAnswered(reqId, req.method, status, code);
  };

  /** Writes a failure as a whole response on the bare socket (where Node has no response object), returns its status. */
  const writeRaw = (socket: Socket, reqId: string, failure: HttpFailure): number => {
    const { status, message, headers } = toResponse(failure);
    const body = JSON.stringify({ error: status, message });
    const fields = contractHeaders(reqId, headers, body);
    let head = `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\ndate: ${new Date().toUTCString()}\r\n`;
    for (let i = 0; i < fields.length; i += 2) head += `${fields[i]}: ${fields[i + 1]}\r\n`;
    socket.write(`${head}\r\n${body}`);
    return status;
  };

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
    res.once('close', () => {
      conn.inFlight -= 1;
      inFlight.count -= 1;
    });
    conn.last = { req, res };

    if (req.httpVersionMajor !== 1) return answer(req, res, { _tag: 'VersionNotSupported' }, 'HTTP_VERSION');
    if (badHost(req)) {
      return answer(req, res, { _tag: 'MalformedRequest', reason: 'send exactly one Host header' }, 'HOST');
    }
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
    handler(req, res);
  };

  server.on('connection', (socket: Socket) => {
    const conn = connectionOf(socket);
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
  // Node answers 100-continue itself; any other expectation comes here.
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
      const reqId = requestIdFrom(undefined);
      logAnswered(reqId, undefined, writeRaw(socket, reqId, failure), code);
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
    const reqId = requestIdFrom(req.headers['x-request-id']);
    const method = req.method ?? 'CONNECT';
    logAnswered(reqId, method, writeRaw(socket, reqId, { _tag: 'MethodNotImplemented', method }), 'CONNECT');
    linger(socket, conn);
  });

  let dropped = 0;
  let droppedLoggedAt = 0;
  server.on('drop', () => {
    dropped += 1;
    const now = Date.now();
    if (now - droppedLoggedAt >= 1000) {
      logger.warn({ dropped, limit: limits.maxConnections }, 'connections refused: at the connection limit');
      dropped = 0;
      droppedLoggedAt = now;
    }
  });

  return server;
};
