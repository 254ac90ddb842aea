/**
 * What one client may hold of the server (docs/configuration.md). Node's own options bound the headers, timeouts and
 * connections; server.ts the pipelined requests, unsent.ts the unsent bytes, body.ts the bodies; connections.ts lingers.
 */
export interface ServerLimits {
  readonly maxConnections: number;
  readonly maxPipelinedRequests: number;
  readonly maxHeaderSize: number;
  /** Header fields of one request (Node keeps one more and drops the rest; one more is 431). */
  readonly maxHeaderFields: number;
  readonly headersTimeoutMs: number;
  readonly requestTimeoutMs: number;
  readonly keepAliveTimeoutMs: number;
  readonly idleTimeoutMs: number;
  readonly maxUnsentBytes: number;
  /** A connection whose unsent response has not moved for this long is not reading. */
  readonly unsentStallMs: number;
  readonly maxBodyBytes: number;
  readonly lingerMs: number;
  readonly lingerBytes: number;
}

export const defaultServerLimits: ServerLimits = {
  maxConnections: 1000,
  maxPipelinedRequests: 16,
  maxHeaderSize: 16384,
  maxHeaderFields: 100,
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
