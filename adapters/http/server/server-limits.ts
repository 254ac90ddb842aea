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
   * Bytes of responses written and not yet taken by the kernel, over all connections (a shared cached Buffer counted
   * once); past it, the connections that have stopped reading (see `unsentStallMs`) are closed, longest stalled first,
   * until the total is below it again. A connection that reads is never closed for it.
   */
  readonly maxUnsentBytes: number;
  /** A connection whose unsent response has not moved (the kernel took no byte of it) for this long is not reading. */
  readonly unsentStallMs: number;
  /**
   * Request-body bytes held in memory at once by all the requests whose bodies are being read (a declared
   * Content-Length is counted whole when its reading starts, a chunked body as it arrives); a body that would pass
   * it is refused with 503 before it is read further.
   */
  readonly maxBodyBytes: number;
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
  maxUnsentBytes: 64 * 1024 * 1024,
  unsentStallMs: 2_000,
  maxBodyBytes: 64 * 1024 * 1024,
  lingerMs: 2_000,
  lingerBytes: 1024 * 1024,
};

/** A quarter of the shorter timeout, between 25 ms and 1 s. */
export const checkingInterval = ({ headersTimeoutMs, requestTimeoutMs }: ServerLimits): number =>
  Math.min(1000, Math.max(25, Math.floor(Math.min(headersTimeoutMs, requestTimeoutMs) / 4)));
