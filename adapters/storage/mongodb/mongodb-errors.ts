import * as mongo from 'mongodb';

/**
 * Which driver errors mean "the store cannot answer now" (503: retry later, outcome unknown), decided by what the
 * driver says (its exported classes, the labels it and the server attach, the server's codes), never by a pattern over
 * class names. Everything else is a fault. First, the server codes for "not now": not (or no longer) the primary,
 * shutting down or changing state, a peer unreachable, out of time (the driver's retryable and SDAM lists use them).
 */
export const UNAVAILABLE_CODES: ReadonlySet<number> = new Set([
  6 /* HostUnreachable */, 7 /* HostNotFound */, 50 /* MaxTimeMSExpired */, 63 /* StaleShardVersion */,
  64 /* WriteConcernFailed, WriteConcernTimeout before MongoDB 8.1 */, 89 /* NetworkTimeout */,
  91 /* ShutdownInProgress */, 133 /* FailedToSatisfyReadPreference */, 134 /* ReadConcernMajorityNotAvailableYet */,
  150 /* StaleEpoch */, 189 /* PrimarySteppedDown */, 262 /* ExceededTimeLimit */, 9001 /* SocketException */,
  10058 /* LegacyNotPrimary */, 10107 /* NotWritablePrimary */, 11600 /* InterruptedAtShutdown */,
  11601 /* Interrupted */, 11602 /* InterruptedDueToReplStateChange */, 13388 /* StaleConfig */,
  13435 /* NotPrimaryNoSecondaryOk */, 13436 /* NotPrimaryOrSecondary */,
]);

/** Write-concern failures that are configuration, not weather: waiting will not help (a fault, logged as one). */
const MISCONFIGURED_WRITE_CONCERN = new Set([79 /* UnknownReplWriteConcern */, 100 /* UnsatisfiableWriteConcern */]);

/** Labels by which the driver or the server say "this did not go through now; it may be retried". */
const UNAVAILABLE_LABELS: readonly string[] = [
  mongo.MongoErrorLabel.RetryableWriteError,
  mongo.MongoErrorLabel.ResetPool,
  mongo.MongoErrorLabel.TransientTransactionError,
  mongo.MongoErrorLabel.PoolRequestedRetry,
  mongo.MongoErrorLabel.InterruptInUseConnections,
  mongo.MongoErrorLabel.RetryableError,
  mongo.MongoErrorLabel.SystemOverloadedError,
];

/** A network error (timeouts, a pool cleared after one included), no server to select, a closed client (shutdown). */
const UNAVAILABLE_CLASSES = [
  mongo.MongoNetworkError,
  mongo.MongoServerSelectionError,
  mongo.MongoOperationTimeoutError,
  mongo.MongoStalePrimaryError,
  mongo.MongoClientClosedError,
  mongo.MongoTopologyClosedError,
  mongo.MongoServerClosedError,
  mongo.MongoNotConnectedError,
];

/** Errors the driver raises and names but does not export: a pool closed under an operation, a wait-queue timeout. */
const UNEXPORTED_UNAVAILABLE = new Set(['MongoPoolClosedError', 'MongoWaitQueueTimeoutError']);

/** Socket errors the driver lets through unwrapped (a command written to a connection a killed server closed). */
const CONNECTION_GONE = new Set(
  `EPIPE ECONNRESET ECONNREFUSED ECONNABORTED ETIMEDOUT EHOSTUNREACH ENETUNREACH ENOTCONN ERR_SOCKET_CLOSED
  ERR_STREAM_DESTROYED ERR_STREAM_WRITE_AFTER_END`.split(/\s+/),
);

/**
 * FerretDB passes on losing its backend as an InternalError (code 1) with the client library's text: cannot connect,
 * connection ended mid-command, PostgreSQL shutting down (SQLSTATE 08xxx, 57P01-57P03), no answer within maxTimeMS
 * ("i/o timeout"; SQLite's query "interrupted (9)"), or SQLite's file busy ("database is locked (5)"). The store is away
 * or too slow, not faulty: a 503 like any other outage.
 */
const FERRETDB_BACKEND_GONE =
  /failed to connect to `|unexpected EOF|conn closed|connection reset by peer|broken pipe|i\/o timeout|interrupted \(9\)|database is locked \(5\)|tls error|\(SQLSTATE (08[0-9A-Z]{3}|57P0[123])\)/;

/** True when the error says the store did not answer in time or at all, or cannot serve writes/reads right now. */
export const isUnavailable = (e: unknown): boolean => {
  if (e instanceof Error && CONNECTION_GONE.has(String((e as NodeJS.ErrnoException).code))) return true;
  if (!(e instanceof mongo.MongoError)) return false;
  if (UNAVAILABLE_CLASSES.some((c) => e instanceof c)) return true;
  if (e instanceof mongo.MongoDriverError && UNEXPORTED_UNAVAILABLE.has(e.name)) return true;
  if (UNAVAILABLE_LABELS.some((label) => e.hasErrorLabel(label))) return true;
  if (e instanceof mongo.MongoWriteConcernError) return !MISCONFIGURED_WRITE_CONCERN.has(Number(e.code));
  if (ferretDbSays(e, FERRETDB_BACKEND_GONE)) return true;
  return (e instanceof mongo.MongoServerError && UNAVAILABLE_CODES.has(Number(e.code))) || isWriteConflict(e);
};

/** The server's error code; and whether FerretDB passed on its backend's `text` as an InternalError (code 1). */
const codeOf = (e: unknown) => (e instanceof mongo.MongoServerError ? Number(e.code) : undefined);
const ferretDbSays = (e: unknown, text: RegExp) =>
  e instanceof mongo.MongoServerError && Number(e.code) === 1 && text.test(e.errmsg ?? e.message);

/**
 * A unique index refused a write or a build: DuplicateKey (11000), or FerretDB's InternalError (code 1) carrying its
 * backend's refusal of an update or a build (SQLite's "UNIQUE constraint failed", PostgreSQL's SQLSTATE 23505).
 */
export const isDuplicateKey = (e: unknown): boolean =>
  codeOf(e) === 11000 || ferretDbSays(e, /UNIQUE constraint failed|\(SQLSTATE 23505\)/);

/**
 * The server gave up a write that collided with another at the same moment, changing nothing: WriteConflict (112), or
 * FerretDB passing on PostgreSQL's deadlock (40P01) or serialization failure (40001) as an InternalError (code 1).
 */
export const isWriteConflict = (e: unknown): boolean =>
  codeOf(e) === 112 || ferretDbSays(e, /\(SQLSTATE (40P01|40001)\)/);
