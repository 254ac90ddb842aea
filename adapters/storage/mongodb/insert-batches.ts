import { MongoBulkWriteError, MongoServerError, type Document, type WriteError } from 'mongodb';

/** The driver's two ways to insert, as a collection offers them (both retryable writes on a replica set). */
export interface Inserts<D extends Document> {
  readonly insertOne: (document: D) => Promise<unknown>;
  /** `ordered: false`: each document inserted or refused on its own. */
  readonly insertMany: (documents: D[]) => Promise<unknown>;
}

/** Documents in one command at most (a plant's document is under 2.5 KiB: far under the 16 MiB command limit). */
export const MAX_BATCH = 1000;

interface Waiting<D> {
  readonly document: D;
  readonly resolve: () => void;
  readonly reject: (e: unknown) => void;
}

/**
 * The inserts asked for during one turn of the event loop go to the server in one `insert` command (`insertMany`,
 * `ordered: false`): the server inserts or refuses each document on its own, by the same unique indexes, as it would
 * one `insertOne` each (MongoDB documents it; test/adapters/insert-batches.test.ts holds both FerretDB 1.24 handlers,
 * and any MongoDB named by MONGODB_URI, to it), while the round trip, the driver's work per command and the server's
 * are paid once. Under load that is most of a create's cost: 16 inserts at once on FerretDB/PostgreSQL cost the
 * client 125-148 µs of CPU each one by one, 45-62 µs in batches of 4, and the server took 3,800-4,000 a second
 * against 8,800-9,500 (docs/storage.md). Alone, a create waits for nothing: its batch leaves in the same turn of the
 * loop (`setImmediate`), and a batch of one is an `insertOne`, as before batching.
 *
 * Both are the driver's retryable writes (CONTRACT.md §10: on a replica set the command carries a transaction number,
 * the driver sends it once more across an election, and the server recognizes a write it already applied).
 *
 * Each insert is answered as `insertOne` answers: resolved when stored, rejected with the server's refusal of that
 * document (a MongoServerError: its code, and on MongoDB for an `insertOne` the index that refused it), or with what
 * failed the command. `insertMany` reports a failure of the whole command as a MongoBulkWriteError; where the driver
 * raised it (a network error, a server selection timeout) it keeps that error in `errorResponse`, and that error is
 * passed on, so that mongodb-errors.ts tells unavailability (503) from a fault by its class as for any other call. A
 * bulk write's per-document errors do not carry the key pattern (the driver drops it): a refused document of a batch
 * is "taken" without saying by which index, as on FerretDB, and owner-slots.ts looks the id up when it must.
 */
export const insertBatches = <D extends Document>(
  inserts: Inserts<D>,
  max = MAX_BATCH,
): ((document: D) => Promise<void>) => {
  let waiting: Array<Waiting<D>> = [];

  const sendBatch = async (batch: ReadonlyArray<Waiting<D>>): Promise<void> => {
    if (batch.length === 1) {
      const [only] = batch as [Waiting<D>];
      await inserts.insertOne(only.document).then(only.resolve, only.reject);
      return;
    }
    try {
      await inserts.insertMany(batch.map((w) => w.document));
      for (const w of batch) w.resolve();
    } catch (e) {
      settle(batch, e);
    }
  };

  /** Answers each insert of a batch whose command failed, wholly or for some of its documents. */
  const settle = (batch: ReadonlyArray<Waiting<D>>, e: unknown): void => {
    if (!(e instanceof MongoBulkWriteError)) {
      for (const w of batch) w.reject(e);
      return;
    }
    const refusals: WriteError[] = Array.isArray(e.writeErrors) ? e.writeErrors : [e.writeErrors];
    const unconfirmed = e.result?.getWriteConcernError() !== undefined;
    if (refusals.length === 0 && !unconfirmed) {
      // The whole command failed: what the driver raised (kept in errorResponse), or the server's answer (its code and
      // labels are on the bulk error itself).
      const raised = e.errorResponse instanceof Error && e.errorResponse !== e ? e.errorResponse : e;
      for (const w of batch) w.reject(raised);
      return;
    }
    const refused = new Map(refusals.map((r) => [r.index, r]));
    batch.forEach((w, i) => {
      const refusal = refused.get(i);
      if (refusal !== undefined) {
        // As the driver's insertOne turns the write error of its one document into its error (less the document).
        const { op, ...described } = refusal.err;
        w.reject(new MongoServerError(described));
      } else if (unconfirmed) {
        // Written, perhaps, but not confirmed at the write concern: as an insertOne's MongoWriteConcernError.
        w.reject(e);
      } else w.resolve();
    });
  };

  const flush = (): void => {
    const all = waiting;
    waiting = [];
    for (let i = 0; i < all.length; i += max) {
      const batch = all.slice(i, i + max);
      // Whatever went wrong in reading the answer (nothing known does) fails the batch's inserts, never the process.
      sendBatch(batch).catch((e: unknown) => {
        for (const w of batch) w.reject(e);
      });
    }
  };

  return (document) =>
    new Promise<void>((resolve, reject) => {
      if (waiting.length === 0) setImmediate(flush);
      waiting.push({ document, resolve, reject });
    });
};
