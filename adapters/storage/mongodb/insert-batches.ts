import { MongoNetworkError, MongoNetworkTimeoutError, MongoServerError, type Document } from 'mongodb';

/** How one document of a batch fared: stored, or refused by the server on its own (a unique index, mostly). */
export type BatchedInsert = 'inserted' | MongoServerError;

/** Sends one `insert` command with these documents (`ordered: false`) and answers the server's reply. */
export type SendInserts = (documents: Document[]) => Promise<Document>;

/** Documents in one command at most (a plant's document is under 2 KiB: far under the 16 MiB command limit). */
export const MAX_BATCH = 1000;

/**
 * Server codes of a replica set changing hands or a server going down under a command: a primary stepping down or
 * gone, a shutdown, an interruption by a state change. The driver's retryable writes send a write again once after
 * these (and after a network error); so does `insertBatches` (see there).
 */
const FAILOVER_CODES = new Set([91, 189, 10058, 10107, 11600, 11602, 13435, 13436]);

/** Whether the driver would have sent a retryable write again after this error (a timeout is not: the time is out). */
const sendAgain = (e: unknown): boolean =>
  (e instanceof MongoNetworkError && !(e instanceof MongoNetworkTimeoutError)) ||
  (e instanceof MongoServerError && FAILOVER_CODES.has(Number(e.code)));

interface Waiting {
  readonly document: Document;
  readonly resolve: (outcome: BatchedInsert) => void;
  readonly reject: (e: unknown) => void;
}

/**
 * The inserts asked for during one turn of the event loop go to the server as one `insert` command (`ordered: false`):
 * the server inserts or refuses each document on its own, by the same unique indexes, exactly as it would one
 * `insertOne` each (on MongoDB and on FerretDB 1.24, both handlers: test/adapters/insert-batches.test.ts), while the
 * round trip, the driver's work per command and the server's are paid once. Under load that is most of a create's
 * cost: 16 inserts at once on FerretDB/PostgreSQL cost the client 125-148 µs of CPU each one by one, 45-62 µs in
 * batches of 4, and the server took 3,800-4,000 a second against 8,800-9,500 (docs/storage.md). Alone, a create
 * waits for nothing: its batch leaves in the same turn of the loop (`setImmediate`).
 *
 * The command is sent as a command (`Db.command`), not through `insertMany`: the driver wraps any failure of a bulk
 * write in a MongoBulkWriteError and loses the class of the error (a network error, a server selection timeout), by
 * which mongodb-errors.ts tells unavailability (503) from a fault. The price is the driver's retryable write: it does
 * not retry a command. So the batch is sent once more after the errors it would have retried (a network error, a
 * primary gone), as it would. A document of the first send that was stored meets itself the second time and is
 * refused by the (owner, id) index; owner-slots.ts then finds the plant stored, the same as the one asked for, and the
 * create answers 200 as for an identical retry (contract: a retried create is safe).
 */
export const insertBatches = (send: SendInserts, max = MAX_BATCH): ((document: Document) => Promise<BatchedInsert>) => {
  let waiting: Waiting[] = [];

  const sendBatch = async (batch: readonly Waiting[]): Promise<void> => {
    const documents = batch.map((w) => w.document);
    let reply: Document;
    try {
      try {
        reply = await send(documents);
      } catch (e) {
        if (!sendAgain(e)) throw e;
        reply = await send(documents);
      }
    } catch (e) {
      for (const w of batch) w.reject(e);
      return;
    }
    const refused = new Map<number, Document>();
    if (Array.isArray(reply['writeErrors'])) {
      for (const writeError of reply['writeErrors'] as Document[]) refused.set(Number(writeError['index']), writeError);
    }
    batch.forEach((w, i) => {
      const writeError = refused.get(i);
      w.resolve(writeError === undefined ? 'inserted' : new MongoServerError(writeError));
    });
  };

  const flush = (): void => {
    const all = waiting;
    waiting = [];
    for (let i = 0; i < all.length; i += max) void sendBatch(all.slice(i, i + max));
  };

  return (document) =>
    new Promise<BatchedInsert>((resolve, reject) => {
      if (waiting.length === 0) setImmediate(flush);
      waiting.push({ document, resolve, reject });
    });
};
