import {
  MongoClientClosedError,
  MongoDriverError,
  MongoError,
  MongoErrorLabel,
  MongoNetworkError,
  MongoNotConnectedError,
  MongoOperationTimeoutError,
  MongoServerClosedError,
  MongoServerError,
  MongoServerSelectionError,
  MongoStalePrimaryError,
  MongoTopologyClosedError,
  MongoWriteConcernError,
} from 'mongodb';

/**
 * Which MongoDB driver errors mean "the store cannot answer now" (a 503: retry later, outcome unknown), decided by
 * what the driver says (its exported error classes, the error labels it and the server attach, the server's error
 * codes), never by a pattern over class names. Everything else is a fault.
 */

/**
 * Server error codes (https://www.mongodb.com/docs/manual/reference/error-codes/) that mean the server or the replica
 * set cannot serve the operation now: it is not (or no longer) the primary, it is shutting down or changing state, it
 * cannot reach a peer, or the operation ran out of its time. The driver's own retryable-read/write and SDAM lists are
 * built from the same codes.
 */
export const UNAVAILABLE_CODES: ReadonlyMap<number, string> = new Map([
  [6, 'HostUnreachable'],
  [7, 'HostNotFound'],
  [50, 'MaxTimeMSExpired'],
  [63, 'StaleShardVersion'],
  [64, 'WriteConcernFailed'], // WriteConcernTimeout before MongoDB 8.1
  [89, 'NetworkTimeout'],
  [91, 'ShutdownInProgress'],
  [133, 'FailedToSatisfyReadPreference'],
  [134, 'ReadConcernMajorityNotAvailableYet'],
  [150, 'StaleEpoch'],
  [189, 'PrimarySteppedDown'],
  [262, 'ExceededTimeLimit'],
  [9001, 'SocketException'],
  [10058, 'LegacyNotPrimary'],
  [10107, 'NotWritablePrimary'],
  [11600, 'InterruptedAtShutdown'],
  [11601, 'Interrupted'],
  [11602, 'InterruptedDueToReplStateChange'],
  [13388, 'StaleConfig'],
  [13435, 'NotPrimaryNoSecondaryOk'],
  [13436, 'NotPrimaryOrSecondary'],
]);

/** Write-concern failures that are configuration, not weather: waiting will not help (a fault, logged as one). */
const MISCONFIGURED_WRITE_CONCERN = new Set([79 /* UnknownReplWriteConcern */, 100 /* UnsatisfiableWriteConcern */]);

/** Whether a write concern error with this code means "not confirmed yet" (503) rather than a misconfiguration. */
export const writeConcernUnavailable = (code: number): boolean => !MISCONFIGURED_WRITE_CONCERN.has(code);

/** Labels by which the driver or the server say "this did not go through now; it may be retried". */
const UNAVAILABLE_LABELS: readonly string[] = [
  MongoErrorLabel.RetryableWriteError,
  MongoErrorLabel.ResetPool,
  MongoErrorLabel.TransientTransactionError,
  MongoErrorLabel.PoolRequestedRetry,
  MongoErrorLabel.InterruptInUseConnections,
  MongoErrorLabel.RetryableError,
  MongoErrorLabel.SystemOverloadedError,
];

/**
 * Driver errors that the driver raises but does not export a class for (it names them, and the names are part of
 * what it documents): a pool closed under an operation (client closed at shutdown) and a connection wait-queue
 * timeout. Compared whole, never as a pattern; test/adapters/mongodb-errors.test.ts constructs the real classes.
 */
const UNEXPORTED_UNAVAILABLE = new Set(['MongoPoolClosedError', 'MongoWaitQueueTimeoutError']);

/**
 * Socket errors the driver lets through unwrapped: a command written to a connection the server just closed (a killed
 * server) fails with Node's own EPIPE, "This socket has been ended by the other party" (found by test/scale as a 500).
 */
const CONNECTION_GONE = new Set(
  'EPIPE ECONNRESET ECONNREFUSED ECONNABORTED ETIMEDOUT EHOSTUNREACH ENETUNREACH ENOTCONN ERR_SOCKET_CLOSED ERR_STREAM_DESTROYED ERR_STREAM_WRITE_AFTER_END'.split(
    ' ',
  ),
);

/**
 * FerretDB's PostgreSQL handler passes on losing its PostgreSQL as an InternalError (code 1) with the client library's
 * text: it cannot connect ("failed to connect to `user=... database=...`", a TLS refusal), its connection ended
 * mid-command ("unexpected EOF", "conn closed", or the socket's own "connection reset by peer" and "broken pipe" when
 * PostgreSQL was killed under it), PostgreSQL ended it (SQLSTATE class 08, connection exception; 57P01-57P03, shutting
 * down or starting), or did not answer within the command's maxTimeMS (the socket's "i/o timeout": MongoDB's
 * MaxTimeMSExpired). Seen as 500s under load. The store is away or too slow, not faulty: a 503 like any other outage.
 */
const FERRETDB_BACKEND_GONE =
  /failed to connect to `|unexpected EOF|conn closed|connection reset by peer|broken pipe|i\/o timeout|tls error|\(SQLSTATE (08[0-9A-Z]{3}|57P0[123])\)/;

/** True when the error says the store did not answer in time or at all, or cannot serve writes/reads right now. */
export const isUnavailable = (e: unknown): boolean => {
  if (e instanceof Error && CONNECTION_GONE.has(String((e as NodeJS.ErrnoException).code))) return true;
  if (!(e instanceof MongoError)) return false;
  if (
    e instanceof MongoNetworkError || // includes timeouts and a pool cleared after a network error
    e instanceof MongoServerSelectionError ||
    e instanceof MongoOperationTimeoutError ||
    e instanceof MongoStalePrimaryError ||
    // The client was closed (shutdown) under the operation, or before it:
    e instanceof MongoClientClosedError ||
    e instanceof MongoTopologyClosedError ||
    e instanceof MongoServerClosedError ||
    e instanceof MongoNotConnectedError
  ) {
    return true;
  }
  if (e instanceof MongoDriverError && UNEXPORTED_UNAVAILABLE.has(e.name)) return true;
  if (UNAVAILABLE_LABELS.some((label) => e.hasErrorLabel(label))) return true;
  if (e instanceof MongoWriteConcernError) return writeConcernUnavailable(Number(e.code));
  if (e instanceof MongoServerError && Number(e.code) === 1 && FERRETDB_BACKEND_GONE.test(e.errmsg ?? e.message)) {
    return true;
  }
  return (e instanceof MongoServerError && UNAVAILABLE_CODES.has(Number(e.code))) || isWriteConflict(e);
};

/**
 * True when a unique index refused a write or an index build: MongoDB's DuplicateKey (11000). FerretDB 1.24 answers
 * 11000 for an insert, but an update or an index build refused by the backend's own unique constraint comes back as
 * an InternalError (code 1) carrying the backend's message: SQLite's "UNIQUE constraint failed", PostgreSQL's
 * SQLSTATE 23505 (unique_violation). Those two texts are matched whole, as FerretDB's handlers pass them on.
 */
export const isDuplicateKey = (e: unknown): boolean => {
  if (!(e instanceof MongoServerError)) return false;
  if (Number(e.code) === 11000) return true;
  return Number(e.code) === 1 && /UNIQUE constraint failed|\(SQLSTATE 23505\)/.test(e.errmsg ?? e.message);
};

/**
 * True when the server gave up a write because it collided with another one at the same moment, which the same write
 * sent again may not: MongoDB's WriteConflict (112; outside transactions mongod normally retries it itself), or
 * FerretDB on PostgreSQL passing on PostgreSQL's deadlock (SQLSTATE 40P01) or serialization failure (40001) as an
 * InternalError (code 1): seen when concurrent processes moved one owner's plants into slots at once. Such a write
 * changed nothing.
 */
export const isWriteConflict = (e: unknown): boolean => {
  if (!(e instanceof MongoServerError)) return false;
  if (Number(e.code) === 112) return true;
  return Number(e.code) === 1 && /\(SQLSTATE (40P01|40001)\)/.test(e.errmsg ?? e.message);
};
