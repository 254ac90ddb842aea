import { createRequire } from 'node:module';
import {
  MongoClientClosedError,
  MongoError,
  MongoErrorLabel,
  MongoInvalidArgumentError,
  MongoNetworkError,
  MongoNetworkTimeoutError,
  MongoNotConnectedError,
  MongoOperationTimeoutError,
  MongoParseError,
  MongoServerClosedError,
  MongoServerError,
  MongoServerSelectionError,
  MongoStalePrimaryError,
  MongoTopologyClosedError,
  MongoWriteConcernError,
  TopologyType,
} from 'mongodb';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import {
  isDuplicateKey,
  isUnavailable,
  isWriteConflict,
  UNAVAILABLE_CODES,
} from '../../adapters/storage/mongodb/mongodb-errors.js';

/**
 * The MongoDB adapter's classifier, over the driver's own error classes constructed directly: what means "the store
 * cannot answer now" (503) and what is a fault (500). The driver's errors for a closed pool and a wait-queue timeout
 * have no exported class; they are taken from the driver's files, so a renamed class fails here, not in production.
 */
const driverFile = createRequire(import.meta.url);
const cmap = driverFile('mongodb/lib/cmap/errors.js') as {
  PoolClosedError: new (pool: { address: string }) => MongoError;
  PoolClearedError: new (pool: { address: string; serverGeneration: number }) => MongoError;
  WaitQueueTimeoutError: new (message: string, address: string) => MongoError;
};
const { TopologyDescription } = driverFile('mongodb/lib/sdam/topology_description.js') as {
  TopologyDescription: new (type: string) => object;
};

const test = suite('MongoDB error classification');

const serverError = (code: number, codeName: string, errorLabels: string[] = []) =>
  new MongoServerError({ ok: 0, code, codeName, errmsg: `${codeName} (test)`, errorLabels });

test('network errors, timeouts and server selection failures are unavailability', () => {
  const cases: Array<[string, unknown]> = [
    ['MongoNetworkError', new MongoNetworkError('connection reset')],
    ['MongoNetworkTimeoutError', new MongoNetworkTimeoutError('connection timed out')],
    [
      'MongoServerSelectionError',
      new MongoServerSelectionError('no primary', new TopologyDescription(TopologyType.ReplicaSetNoPrimary) as never),
    ],
    ['MongoOperationTimeoutError', new MongoOperationTimeoutError('timed out')],
    ['MongoStalePrimaryError', new MongoStalePrimaryError('stale primary')],
    ['PoolClearedError', new cmap.PoolClearedError({ address: 'db:27017', serverGeneration: 1 })],
    ['WaitQueueTimeoutError', new cmap.WaitQueueTimeoutError('timed out waiting for a connection', 'db:27017')],
  ];
  for (const [label, e] of cases) assert.ok(isUnavailable(e), label);
});

test('a client or pool closed under the operation (shutdown) is unavailability, not a fault', () => {
  const cases: Array<[string, unknown]> = [
    ['MongoClientClosedError', new MongoClientClosedError()],
    ['MongoTopologyClosedError', new MongoTopologyClosedError()],
    ['MongoServerClosedError', new MongoServerClosedError()],
    ['MongoNotConnectedError', new MongoNotConnectedError('not connected')],
    ['PoolClosedError', new cmap.PoolClosedError({ address: 'db:27017' })],
  ];
  for (const [label, e] of cases) assert.ok(isUnavailable(e), label);
});

test('server codes for not primary, stepping down, shutting down, interrupted, unreachable and time limits', () => {
  const named: Array<[number, string]> = [
    [10107, 'NotWritablePrimary'],
    [13435, 'NotPrimaryNoSecondaryOk'],
    [13436, 'NotPrimaryOrSecondary'],
    [189, 'PrimarySteppedDown'],
    [91, 'ShutdownInProgress'],
    [11600, 'InterruptedAtShutdown'],
    [11602, 'InterruptedDueToReplStateChange'],
    [6, 'HostUnreachable'],
    [7, 'HostNotFound'],
    [89, 'NetworkTimeout'],
    [9001, 'SocketException'],
    [262, 'ExceededTimeLimit'],
    [50, 'MaxTimeMSExpired'],
    [64, 'WriteConcernFailed'],
  ];
  for (const [code, name] of named) {
    assert.ok(UNAVAILABLE_CODES.has(code), `${name} (${code}) is listed`);
    assert.ok(isUnavailable(serverError(code, name)), `${name} (${code})`);
  }
});

test('an error labelled retryable, reset-pool or transient by the driver or server is unavailability', () => {
  for (const label of [
    MongoErrorLabel.RetryableWriteError,
    MongoErrorLabel.ResetPool,
    MongoErrorLabel.TransientTransactionError,
    MongoErrorLabel.PoolRequestedRetry,
    MongoErrorLabel.SystemOverloadedError,
  ]) {
    assert.ok(isUnavailable(serverError(12345, 'SomethingNew', [label])), label);
  }
});

test('a write concern that times out is unavailability; one that cannot ever be met is a fault', () => {
  const wc = (code: number, codeName: string) =>
    new MongoWriteConcernError({ ok: 1, n: 1, writeConcernError: { code, codeName, errmsg: codeName } });
  assert.ok(isUnavailable(wc(64, 'WriteConcernFailed')));
  assert.ok(isUnavailable(wc(91, 'ShutdownInProgress')));
  assert.not.ok(isUnavailable(wc(100, 'UnsatisfiableWriteConcern')));
  assert.not.ok(isUnavailable(wc(79, 'UnknownReplWriteConcern')));
});

test('bugs and refusals are faults: bad arguments, parse errors, duplicate keys, other server errors, non-driver errors', () => {
  const cases: Array<[string, unknown]> = [
    ['MongoInvalidArgumentError', new MongoInvalidArgumentError('bad option')],
    ['MongoParseError', new MongoParseError('bad uri')],
    ['DuplicateKey', serverError(11000, 'DuplicateKey')],
    ['BadValue', serverError(2, 'BadValue')],
    ['Unauthorized', serverError(13, 'Unauthorized')],
    ['a plain Error', new Error('connection reset')],
    ['a TypeError', new TypeError('x is undefined')],
    ['a string', 'MongoNetworkError'],
  ];
  for (const [label, e] of cases) assert.not.ok(isUnavailable(e), label);
});

test('a class merely named like an unavailability error is not taken for one', () => {
  // A MongoError subclass (a plugin's, or one a future driver adds for a bad setting) whose name says "Network":
  // what counts is the class the driver raised, its labels and its code, not how it is called.
  class MongoNetworkSettingsError extends MongoError {}
  assert.not.ok(isUnavailable(new MongoNetworkSettingsError('bad network settings')));
  class NetworkTimeoutError extends Error {}
  assert.not.ok(isUnavailable(new NetworkTimeoutError('not from the driver')));
});

test("a duplicate key is MongoDB's 11000, or FerretDB's InternalError carrying SQLite's or PostgreSQL's unique violation", () => {
  const server = (code: number, errmsg: string) => new MongoServerError({ ok: 0, code, errmsg });
  assert.ok(isDuplicateKey(server(11000, 'E11000 duplicate key error collection: db.plants')));
  assert.ok(isDuplicateKey(server(1, "constraint failed: UNIQUE constraint failed: index 'p_b' (2067)")));
  assert.ok(isDuplicateKey(server(1, 'ERROR: could not create unique index "p_b_idx" (SQLSTATE 23505)')));
  assert.not.ok(isDuplicateKey(server(1, 'ERROR: relation "p" does not exist (SQLSTATE 42P01)')));
  assert.not.ok(isDuplicateKey(server(2, 'UNIQUE constraint failed')), 'only within an InternalError');
  assert.not.ok(isDuplicateKey(new Error('E11000 duplicate key')), 'only a server error');
});

test("a write conflict is MongoDB's WriteConflict, or FerretDB's InternalError carrying PostgreSQL's deadlock; both are 503s", () => {
  const server = (code: number, errmsg: string) => new MongoServerError({ ok: 0, code, errmsg });
  const deadlock = server(
    1,
    '[collection.go:227 postgresql.(*collection).UpdateAll] ERROR: deadlock detected (SQLSTATE 40P01)',
  );
  assert.ok(isWriteConflict(deadlock));
  assert.ok(isWriteConflict(server(112, 'WriteConflict error: this operation conflicted with another operation')));
  assert.ok(isWriteConflict(server(1, 'ERROR: could not serialize access (SQLSTATE 40001)')));
  assert.not.ok(isWriteConflict(server(1, 'ERROR: could not create unique index "p_b_idx" (SQLSTATE 23505)')));
  assert.not.ok(isWriteConflict(server(2, 'deadlock detected (SQLSTATE 40P01)')), 'only within an InternalError');
  assert.ok(isUnavailable(deadlock), 'a request that meets one is a 503: safe to retry');
});

test("FerretDB's InternalError for its PostgreSQL gone or too slow (cannot connect, connection ended, shutting down, timed out), or SQLite interrupted at maxTimeMS, is unavailability", () => {
  const server = (code: number, errmsg: string) => new MongoServerError({ ok: 0, code, errmsg });
  for (const text of [
    'failed to connect to `user=postgres database=postgres`: 127.0.0.1:5432 (127.0.0.1): dial error: dial tcp 127.0.0.1:5432: connect: connection refused',
    '[pool.go:210 pool.(*Pool).Get] unexpected EOF',
    'failed to connect to `user=postgres database=postgres`: tls error: server refused TLS connection',
    'FATAL: terminating connection due to administrator command (SQLSTATE 57P01)',
    'FATAL: the database system is starting up (SQLSTATE 57P03)',
    'conn closed',
    'read tcp 127.0.0.1:51234->127.0.0.1:5432: read: connection reset by peer',
    'write tcp 127.0.0.1:51234->127.0.0.1:5432: write: broken pipe',
    // A command's maxTimeMS ran out while PostgreSQL had not answered (seen under load, bench:scale case e).
    '[msg_find.go:344 handler.handleMaxTimeMSError] [collection.go:109 postgresql.(*collection).Query] timeout: read tcp 127.0.0.1:50518->127.0.0.1:43975: i/o timeout',
    // The same on SQLite: the query interrupted (SQLITE_INTERRUPT, 9) at maxTimeMS (bench:creates -- --one-owner --not-held).
    '[msg_find.go:344 handler.handleMaxTimeMSError] [collection.go:94 sqlite.(*collection).Query] interrupted (9)',
    // SQLite busy past its wait (SQLITE_BUSY), seen under 16 creates at once with a slow scan beside them.
    '[msg_insert.go:168 handler.(*Handler).MsgInsert] [collection.go:135 sqlite.(*collection).InsertAll.func1] database is locked (5) (SQLITE_BUSY)',
  ]) {
    assert.ok(isUnavailable(server(1, text)), text);
  }
  assert.not.ok(
    isUnavailable(server(1, 'ERROR: relation "p" does not exist (SQLSTATE 42P01)')),
    'other backend errors',
  );
  assert.not.ok(isUnavailable(server(2, 'unexpected EOF')), 'only within an InternalError');
});

test.run();
