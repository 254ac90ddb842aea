import { AsyncLocalStorage } from 'node:async_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import * as E from 'fp-ts/lib/Either.js';
import type * as TE from 'fp-ts/lib/TaskEither.js';
import { MongoClient, MongoServerError, ObjectId, type Collection } from 'mongodb';
import { storageContended, storageUnavailable, type StorageUnavailable } from '../../../application/errors.js';
import { NO_PLANT_LIMIT, type PlantPage, type PlantRepository } from '../../../application/ports/plant-repository.js';
import type { Logger } from '../../../application/ports/logger.js';
import type { Plant } from '../../../domain/plant.js';
import { isDuplicateKey, isUnavailable, isWriteConflict } from './mongodb-errors.js';
import { decodeStored } from './plant-document.js';
import { IndexUnusable, indexUpkeep } from './indexes.js';
import { Bound, HELD_BYTES, QuotaForgotten, timings, type QuotaStore } from './quota.js';

export interface MongoOptions {
  readonly uri: string;
  readonly db: string;
  readonly timeoutMs: number; // T: every request's deadline (quota.ts, `timings`)
  readonly writeConcern: 'majority' | number;
  readonly journal: boolean;
  readonly logger: Logger;
  readonly indexRecheckMs?: number; // tests: `timings`'s indexCheckMs
  readonly slotCacheBytes?: number; // the owners held at most, in bytes (MONGODB_SLOTS_MEMORY_BYTES, 64 MiB)
  readonly lookTtlMs?: number; // tests: `timings`'s lookTtlMs
  readonly monitorCommands?: boolean; // command monitoring events on `client` (tests count round trips)
}

/** One per plant, unique on (owner, id) and on (owner, slot) (quota.ts); `id` a BSON int64, `_id` new per create. */
type PlantDocument = Plant & { _id: ObjectId; owner: string; slot: number };

const PLANT_FIELDS = { _id: 0, owner: 0, slot: 0 } as const; // a plant read back, without the adapter's fields
const SLOT_ONLY = { _id: 0, slot: 1 } as const; // a slot alone: MongoDB reads it from the (owner, slot) index
const readConcern = { level: 'majority' } as const;
const slotted = (owner: string, d: { _id: ObjectId; slot: number }) => ({ ref: { owner, _id: d._id }, slot: +d.slot });

export const COLLECTION = 'plants';

class DeadlineExceeded extends Error {}
/** Concurrent creates of the owner kept taking the slots it chose: nothing stored, safe to retry; no outage (503). */
class Contended extends Error {}

/** The request a command is sent for: the signal aborted at its deadline, and that deadline (performance.now()). */
const request = new AsyncLocalStorage<{ readonly signal: AbortSignal; readonly deadline: number }>();

/**
 * Runs a call under a hard deadline (its signal aborted then: no command leaves after it, see `bounded`), outages as
 * StorageUnavailable (503, outcome unknown). A command sent may land after it, harmlessly (a late delete removes the
 * document it found, a late insert stores the plant as an identical retry would).
 */
const guarded =
  <A>(timeoutMs: number, run: (check: () => void) => Promise<A>): TE.TaskEither<StorageUnavailable, A> =>
  async () => {
    const controller = new AbortController();
    const { signal } = controller;
    const timer = setTimeout(() => controller.abort(new DeadlineExceeded('storage deadline exceeded')), timeoutMs);
    const deadline = new Promise<never>((_, reject) => (signal.onabort = () => reject(signal.reason as Error)));
    try {
      const call = request.run({ signal, deadline: performance.now() + timeoutMs }, run, () => signal.throwIfAborted());
      return E.right(await Promise.race([call, deadline]));
    } catch (e) {
      controller.abort(e); // past its deadline, or failed: a branch of the call still running sends nothing more
      // Contended, or the store answered that the request's write collided with another of its owner's: no outage.
      if (e instanceof Contended || isWriteConflict(e)) return E.left(storageContended);
      const outage = e instanceof DeadlineExceeded || e instanceof IndexUnusable || e instanceof QuotaForgotten;
      if (outage || isUnavailable(e)) return E.left(storageUnavailable);
      throw e;
    } finally {
      clearTimeout(timer);
    }
  };

export type MongodbPlantRepository = ReturnType<typeof mongodbPlantRepository>;

/**
 * Plants in MongoDB (STORAGE=mongodb). A create is one insertOne in the steady state (quota.ts); a page is an index walk
 * on (owner, id): owner equal, id after the cursor, sorted by id, limit + 1, never a skip; a delete a findOne and a
 * deleteOne by owner and `_id`. Writes wait for the configured write concern (majority, journaled, by default). The
 * unique indexes are built before the first create; when the server is down at start-up the service still starts,
 * reports not ready, and builds them when the server answers.
 */
export const mongodbPlantRepository = (options: MongoOptions) => {
  const { timeoutMs, logger } = options;
  const tuned = { indexCheckMs: options.indexRecheckMs, lookTtlMs: options.lookTtlMs };
  const { lookTtlMs, lookMs, indexCheckMs } = timings(timeoutMs, tuned);
  const client = new MongoClient(options.uri, {
    useBigInt64: true,
    serverSelectionTimeoutMS: timeoutMs,
    connectTimeoutMS: timeoutMs,
    socketTimeoutMS: lookMs,
    waitQueueTimeoutMS: timeoutMs,
    heartbeatFrequencyMS: 2000,
    minHeartbeatFrequencyMS: 200,
    // Creates, deletes and moves are insertOne/deleteOne/updateOne: on a replica set the driver retries each once
    // across an election (the server recognizes a retried write). Reads go once (`looked`): at an election, a 503.
    retryWrites: true,
    retryReads: false,
    appName: 'plant-store',
    monitorCommands: options.monitorCommands ?? false,
  });
  const db = client.db(options.db);
  const collection: Collection<PlantDocument> = db.collection<PlantDocument>(COLLECTION);
  const { writeConcern: w, journal } = options;
  /**
   * A command's options: its request's signal, which the driver checks before every server selection, checkout and send,
   * its own retries' included, and which cuts a reply awaited past the deadline (the driver's `timeoutMS` has no effect
   * from its 7.8); the time left as `maxTimeMS` and `wtimeoutMS`, so that the server gives up then too.
   */
  const bounded = () => {
    const { signal, deadline } = request.getStore() ?? { deadline: performance.now() + timeoutMs };
    const maxTimeMS = Math.max(1, Math.ceil(deadline - performance.now()));
    return { signal, maxTimeMS, writeConcern: { w, journal, wtimeoutMS: maxTimeMS } };
  };

  // A read of slots (the highest, a page: quota.ts's looks) goes while a request waits on it, then belongs to none:
  // bounded by half a look's life, so that what a slow store answers after they all gave up is kept for their retries.
  const looked = () => ({ signal: AbortSignal.timeout(lookMs), maxTimeMS: lookMs });

  /** Every filter names the owner, so that on a cluster sharded on `{owner: 1}` each command reaches one shard. */
  const store: QuotaStore<{ readonly owner: string; readonly _id: ObjectId }> = {
    insert: async (owner, p, slot) => {
      try {
        await collection.insertOne({ _id: new ObjectId(), owner, slot, ...p }, bounded());
        return 'inserted';
      } catch (e) {
        if (!isDuplicateKey(e)) throw e;
        // MongoDB names the index that refused it; FerretDB does not, and then the caller looks the id up.
        return e instanceof MongoServerError && 'slot' in (e.keyPattern ?? {}) ? 'slot-taken' : 'taken';
      }
    },
    // Majority-committed: a plant this read answers "already stored" (200) with is one no failover takes back.
    find: async (owner, id) => {
      const doc = await collection.findOne({ owner, id }, { ...bounded(), projection: { owner: 0 }, readConcern });
      return doc === null ? undefined : { plant: decodeStored(doc), ...slotted(owner, doc) };
    },
    top: async (owner) => {
      const top = await collection.findOne({ owner }, { ...looked(), sort: { slot: -1 }, projection: { slot: 1 } });
      return top === null ? undefined : slotted(owner, top);
    },
    slots: async (owner, after, limit) => {
      // Sorted by slot, so that MongoDB walks the (owner, slot) index and reads the slots from it alone; one reply.
      const docs = await collection
        .find({ owner, slot: { $gt: after } }, { ...looked(), projection: SLOT_ONLY, sort: { slot: 1 }, limit })
        .batchSize(limit)
        .toArray();
      return docs.map((d) => Number(d.slot));
    },
    outside: async (owner, from) =>
      (await collection.find({ owner, slot: { $gte: from } }, { ...bounded(), projection: { slot: 1 } }).toArray()).map(
        (d) => slotted(owner, d),
      ),
    count: (owner, except) => collection.countDocuments({ owner, id: { $ne: except } }, bounded()),
    delete: async (ref) => (await collection.deleteOne(ref, bounded())).deletedCount === 1,
    move: async (ref, from, to) => {
      try {
        // No match: the plant was deleted or moved meanwhile; either way it is no longer outside.
        await collection.updateOne({ ...ref, slot: from }, { $set: { slot: to } }, bounded());
        return true;
      } catch (e) {
        // The slot is taken, or (FerretDB/PostgreSQL) two moves of one plant deadlocked and this one changed nothing.
        if (isDuplicateKey(e) || isWriteConflict(e)) return false;
        throw e;
      }
    },
  };

  const budget = options.slotCacheBytes ?? 64 * 1024 * 1024;
  const slots = new Bound(store, {
    now: () => performance.now(),
    lookTtlMs,
    maxHeld: (max) => Math.floor(budget / (Math.ceil(max / 8) + HELD_BYTES)),
    random: (n) => Math.floor(Math.random() * n),
  });
  const indexes = indexUpkeep(collection as unknown as Collection, {
    logger,
    namespace: `${options.db}.${COLLECTION}`,
    onMissing: () => slots.forget(),
  });

  let connected: Promise<unknown> | undefined;
  // Once, a failed attempt forgotten (after one the driver's topology stays closed); connected, it reconnects itself.
  const connect = (): Promise<unknown> =>
    (connected ??= client.connect().catch((e: unknown) => {
      connected = undefined;
      throw e;
    }));

  const call = <A>(run: (check: () => void) => Promise<A>) =>
    guarded(timeoutMs, (check) => connect().then(() => run(check)));
  const repository: PlantRepository = {
    insert: (owner, p, maxPlants = NO_PLANT_LIMIT) =>
      call(async (check) => {
        await indexes.ready();
        const outcome = await slots.insert(owner, p, maxPlants, check);
        if (outcome === undefined) throw new Contended('contended');
        return outcome;
      }),

    page: (owner, after, limit) =>
      call(async (): Promise<PlantPage> => {
        const filter = after === undefined ? { owner } : { owner, id: { $gt: after } };
        const docs = await collection
          .find(filter, { ...bounded(), projection: PLANT_FIELDS })
          .sort({ id: 1 })
          .limit(limit + 1)
          .batchSize(limit + 1) // the whole page in the first reply: one round trip, never a getMore
          .toArray();
        const more = docs.length > limit;
        return { plants: (more ? docs.slice(0, limit) : docs).map(decodeStored), more };
      }),

    remove: (owner, id) => call((check) => slots.remove(owner, id, check)),

    // Ready: the server answers and both unique indexes are in place (a create can be served).
    ping: call(async () => {
      await db.command({ ping: 1 }, bounded());
      await indexes.check();
      await indexes.ready();
    }),
  };

  // Connect and build the indexes now, without making start-up wait (failures show in /readyz and as 503s); then a
  // dropped index is noticed within indexCheckMs, without a request asking.
  const checkIndexes = () => connect().then(indexes.check);
  void checkIndexes().catch((e: unknown) => {
    logger.warn({ err: e instanceof Error ? e.message : String(e) }, 'storage not reachable yet; will retry on demand');
  });
  const recheckTimer = setInterval(() => void checkIndexes().catch(() => undefined), indexCheckMs);
  recheckTimer.unref();

  return {
    repository,
    client, // for its monitoring events (bootstrap logs the reason of a failed heartbeat)
    // At most 1 s: the driver's close waits on a hanging server; requests in flight fail with its closed-client 503s.
    close: async () => {
      clearInterval(recheckTimer);
      const bound = sleep(Math.min(1000, timeoutMs), undefined, { ref: false });
      await Promise.race([client.close().catch(() => undefined), bound]);
    },
  };
};
