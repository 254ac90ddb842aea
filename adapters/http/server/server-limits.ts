/** What one client may hold of the server (docs/configuration.md names each variable). */
export interface ServerLimits {
  /** Open connections at once; one beyond it is closed as soon as it is accepted. */
  readonly maxConnections: number;
  /** Requests read on one connection and not yet answered; the one beyond it closes the connection. */
  readonly maxPipelinedRequests: number;
  /** Bytes of the request line and headers (Node's `maxHeaderSize`); more is 431. */
  readonly maxHeaderSize: number;
  /** Time for the request line and headers (Node's `headersTimeout`); past it, 408. */
  readonly headersTimeoutMs: number;
  /** Time for the whole request (Node's `requestTimeout`); past it, 408. */
  readonly requestTimeoutMs: number;
  /** An idle keep-alive connection is closed after this long (Node's `keepAliveTimeout`). */
  readonly keepAliveTimeoutMs: number;
  /** A connection on which nothing moves either way while a request is open is closed (Node's `server.timeout`). */
  readonly idleTimeoutMs: number;
  /** Response bytes written and not taken by the kernel, over all connections: past it, non-readers are closed. */
  readonly maxUnsentBytes: number;
  /** A connection whose unsent response has not moved for this long is not reading. */
  readonly unsentStallMs: number;
  /** Request-body bytes held at once by all bodies being read; a body that would pass it is 503. */
  readonly maxBodyBytes: number;
  /** After a connection's last response, what the client still sends is read and dropped this long and this much. */
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

/** How often Node checks the timeouts: a quarter of the shorter one, between 25 ms and 1 s. */
export const checkingInterval = ({ headersTimeoutMs, requestTimeoutMs }: ServerLimits): number =>
  Math.min(1000, Math.max(25, Math.floor(Math.min(headersTimeoutMs, requestTimeoutMs) / 4)));
