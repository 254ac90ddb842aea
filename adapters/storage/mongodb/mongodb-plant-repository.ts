import * as E from 'fp-ts/lib/Either.js';
import { pipe } from 'fp-ts/lib/function.js';
import * as TE from 'fp-ts/lib/TaskEither.js';
import * as t from 'io-ts';
import { MongoClient, MongoError, MongoServerError, type Collection, type WriteConcernSettings } from 'mongodb';
import { storageUnavailable, type StorageUnavailable } from '../../../application/errors.js';
import { NO_PLANT_LIMIT, type PlantPage, type PlantRepository } from '../../../application/ports/plant-repository.js';
import type { Logger } from '../../../application/ports/logger.js';
import { PlantId, PlantName, PlantTag, plant, type Plant } from '../../../domain/plant.js';
import { attemptOfDuplicate, createSlotIndex, ownerSlots } from './owner-slots.js';

export interface MongoOptions {
  readonly uri: string;
  readonly db: string;
  /** Bound on every call: server selection, connection, socket, server-side time, and the adapter's own deadline. */
  readonly timeoutMs: number;
  readonly writeConcern: 'majority' | number;
  readonly journal: boolean;
  readonly logger: Logger;
}

/** The stored document: one per plant, unique on (owner, id), `id` a BSON int64. */
interface PlantDocument {
  owner: string;
  id: bigint;
  name: string;
  tag?: string;
  /** The owner's room this plant holds (owner-slots.ts); unique per owner. */
  slot?: number;
}

export const COLLECTION = 'plants';
export const INDEX_NAME = 'owner_1_id_1_unique';
const DUPLICATE_KEY = 11000;

/** Anything read back is decoded again: a document that breaks a domain rule is a fault, not a plant. */
const StoredPlant = t.intersection([
  t.type({ id: t.union([t.bigint, t.number]), name: t.string }),
  t.partial({ tag: t.union([t.string, t.undefined]) }),
]);

const decodeStored = (doc: unknown): Plant => {
  const raw = StoredPlant.decode(doc);
  if (E.isLeft(raw)) throw new Error('a stored plant document has an unexpected shape');
  const { id, name, tag } = raw.right;
  const plantId = PlantId.fromBigInt('id', typeof id === 'bigint' ? id : BigInt(id));
  const plantName = PlantName.from('name', name);
  const plantTag = tag === undefined ? E.right(undefined) : PlantTag.from('tag', tag);
  if (E.isLeft(plantId) || E.isLeft(plantName) || E.isLeft(plantTag))
    throw new Error('a stored plant breaks a domain rule');
  return plant(plantId.right, plantName.right, plantTag.right);
};

/** The adapter's own bound on a call, for a driver that does not give up in time. */
class DeadlineExceeded extends Error {}

/**
 * Socket errors the driver lets through unwrapped: a command written to a connection the server just closed (a
 * killed server) fails with Node's own EPIPE, "This socket has been ended by the other party".
 */
const CONNECTION_GONE = new Set([
  'EPIPE',
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTCONN',
  'ERR_SOCKET_CLOSED',
  'ERR_STREAM_DESTROYED',
  'ERR_STREAM_WRITE_AFTER_END',
]);

/**
 * Errors that mean "the store did not answer in time or at all": the network, server selection, timeouts, pool
 * clearing, an unsatisfied write concern, a shutting-down server. Anything else is a bug and is thrown.
 */
export const isUnavailable = (e: unknown): boolean => {
  if (e instanceof Error && CONNECTION_GONE.has(String((e as NodeJS.ErrnoException).code))) return true;
  if (!(e instanceof MongoError)) return e instanceof DeadlineExceeded;
  const name = e.constructor.name;
  if (/Network|ServerSelection|Timeout|PoolCleared|NotConnected|TopologyClosed|ServerClosed|ServerShutdown/.test(name))
    return true;
  if (e.hasErrorLabel('RetryableWriteError') || e.hasErrorLabel('ResetPool')) return true;
  if (e instanceof MongoServerError) {
    // 50 MaxTimeMSExpired, 64 WriteConcernFailed, 91 ShutdownInProgress, 189 PrimarySteppedDown,
    // 262 ExceededTimeLimit, 10107/13435 not primary, 11600/11602 interrupted
    return (
      [50, 64, 91, 189, 10107, 13435, 11600, 11602, 262].includes(Number(e.code)) ||
      e.errInfo?.['writeConcern'] !== undefined
    );
  }
  return false;
};

/** Runs a driver call under a hard deadline and turns unavailability into StorageUnavailable. */
const guarded =
  <A>(timeoutMs: number, run: () => Promise<A>): TE.TaskEither<StorageUnavailable, A> =>
  async () => {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new DeadlineExceeded('storage deadline exceeded')), timeoutMs);
    });
    try {
      return E.right(await Promise.race([run(), deadline]));
    } catch (e) {
      if (isUnavailable(e)) return E.left(storageUnavailable);
      throw e;
    } finally {
      clearTimeout(timer);
    }
  };

export interface MongoPlantStore {
  readonly repository: PlantRepository;
  readonly close: () => Promise<void>;
  /** The driver's client, for its monitoring events (bootstrap logs the reason of a failed heartbeat). */
  readonly client: MongoClient;
}

/**
 * Plants in MongoDB (STORAGE=mongodb). A page is an index walk on (owner, id): owner equal, id after the cursor,
 * sorted by id, limit + 1, never a skip. Writes wait for the configured write concern (majority, journaled, by
 * default) before they resolve. The unique index is created before the first write; when the server is down at
 * start-up the service still starts, reports not ready, and creates the index when the server answers.
 */
export const mongoPlantStore = (options: MongoOptions): MongoPlantStore => {
  const { timeoutMs } = options;
  const client = new MongoClient(options.uri, {
    useBigInt64: true,
    serverSelectionTimeoutMS: timeoutMs,
    connectTimeoutMS: timeoutMs,
    socketTimeoutMS: timeoutMs,
    waitQueueTimeoutMS: timeoutMs,
    heartbeatFrequencyMS: 2000,
    minHeartbeatFrequencyMS: 200,
    retryReads: true,
    appName: 'plant-store',
  });
  const collection: Collection<PlantDocument> = client.db(options.db).collection<PlantDocument>(COLLECTION);
  const writeConcern: WriteConcernSettings = {
    w: options.writeConcern,
    journal: options.journal,
    wtimeoutMS: timeoutMs,
  };
  const maxTimeMS = timeoutMs;
  // The same collection, untyped, for the quota's queries on `slot` (owner-slots.ts).
  const slotted = client.db(options.db).collection(COLLECTION);
  const slots = ownerSlots(slotted, maxTimeMS, decodeStored);

  let ready: Promise<void> | undefined;
  /**
   * Connects and creates the unique index, once; a failed attempt is forgotten so the next call tries again. The
   * explicit connect matters: when the driver's implicit first connect fails, its topology stays closed and every
   * later call fails with MongoTopologyClosedError even after the server is back. Once connected, the driver
   * reconnects by itself.
   */
  const ensureReady = (): Promise<void> => {
    ready ??= client
      .connect()
      .then(() => collection.createIndex({ owner: 1, id: 1 }, { unique: true, name: INDEX_NAME }))
      .then(() => createSlotIndex(slotted))
      .then(() => undefined)
      .catch((e: unknown) => {
        ready = undefined;
        throw e;
      });
    return ready;
  };

  const repository: PlantRepository = {
    insert: (owner, p, maxPlants = NO_PLANT_LIMIT) =>
      pipe(
        guarded(timeoutMs, async () => {
          await ensureReady();
          const doc: PlantDocument =
            p.tag === undefined ? { owner, id: p.id, name: p.name } : { owner, id: p.id, name: p.name, tag: p.tag };
          // The owner's bound: each plant holds a slot below it, unique per owner (owner-slots.ts).
          const tryInsert = async (slot: number) => {
            try {
              await collection.insertOne({ ...doc, slot }, { writeConcern, maxTimeMS });
              return 'inserted' as const;
            } catch (e) {
              if (e instanceof MongoServerError && e.code === DUPLICATE_KEY) return attemptOfDuplicate(e);
              throw e;
            }
          };
          return slots.insert(owner, maxPlants, p, tryInsert, Date.now() + timeoutMs);
        }),
        // Concurrent creates of this owner kept taking the slots it chose: nothing stored, safe to retry.
        TE.flatMap((outcome) => (outcome === undefined ? TE.left(storageUnavailable) : TE.right(outcome))),
      ),

    page: (owner, after, limit) =>
      guarded(timeoutMs, async (): Promise<PlantPage> => {
        await ensureReady();
        const filter = after === undefined ? { owner } : { owner, id: { $gt: after } };
        const docs = await collection
          .find(filter, { projection: { _id: 0, id: 1, name: 1, tag: 1 }, maxTimeMS })
          .sort({ id: 1 })
          .limit(limit + 1)
          .toArray();
        const more = docs.length > limit;
        return { plants: (more ? docs.slice(0, limit) : docs).map(decodeStored), more };
      }),

    remove: (owner, id) =>
      guarded(timeoutMs, async () => {
        await ensureReady();
        const result = await collection.deleteOne({ owner, id }, { writeConcern, maxTimeMS });
        return result.deletedCount === 1;
      }),

    ping: guarded(timeoutMs, async () => {
      await ensureReady();
      await client.db(options.db).command({ ping: 1 });
    }),
  };

  // Start connecting now, without making start-up wait on it; failures show in /readyz and as 503s.
  void ensureReady().catch((e: unknown) => {
    options.logger.warn(
      { err: e instanceof Error ? e.message : String(e) },
      'storage not reachable yet; will retry on demand',
    );
  });

  return { repository, close: () => client.close(), client };
};
