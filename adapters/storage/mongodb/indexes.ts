import type { Collection, Document } from 'mongodb';
import type { Logger } from '../../../application/ports/logger.js';
import { isDuplicateKey, isUnavailable } from './mongodb-errors.js';

export const INDEX_NAME = 'owner_1_id_1_unique';
export const SLOT_INDEX_NAME = 'owner_1_slot_1_unique';

/** Every index the adapter relies on: unique, prefixed by the shard key `{owner: 1}` (mongodb-shard-key.test.ts). */
export const INDEX_SPECS = [
  { name: INDEX_NAME, key: { owner: 1, id: 1 }, unique: true },
  { name: SLOT_INDEX_NAME, key: { owner: 1, slot: 1 }, unique: true },
] as const;

/** The command that mends what the service cannot rebuild by itself (bootstrap/storage-cli.ts). */
export const REPAIR_COMMAND = 'npm run storage -- repair';

/** An index the service relies on is not in place: creates answer 503 until it is. */
export class IndexUnusable extends Error {}

/** An index as `listIndexes` lists it, or as `$indexStats` shows it: its `spec`, and `building: true` while built. */
type Listed = { unique?: unknown; key?: unknown; spec?: Listed; building?: unknown };

/** Collections whose server does not implement `$indexStats` (FerretDB) or does not grant it: asked once. */
const withoutIndexStats = new WeakSet<object>();

/**
 * The collection's indexes: `$indexStats` tells one still being built (`listIndexes` lists it as built, and a unique one
 * lets duplicates in until done); `listIndexes` where it is not implemented (FerretDB, which answers createIndexes once
 * built) or not granted (`blind` called: one being built is taken as built). None of a collection not there.
 */
const listed = async (collection: Collection<Document>, blind: () => void): Promise<Listed[]> => {
  try {
    if (!withoutIndexStats.has(collection)) return await collection.aggregate<Listed>([{ $indexStats: {} }]).toArray();
    return (await collection.listIndexes().toArray()) as Listed[];
  } catch (e) {
    const code = (e as { code?: unknown }).code;
    if (code === 26 /* NamespaceNotFound */) return [];
    if (code !== 238 /* NotImplemented */ && code !== 13 /* Unauthorized */) throw e;
    if (code === 13) blind();
    withoutIndexStats.add(collection);
    return listed(collection, blind);
  }
};

/** The unique indexes of INDEX_SPECS not in place among those listed: missing, or still being built (on any shard). */
export const notInPlace = (found: readonly Listed[]): Array<(typeof INDEX_SPECS)[number]> => {
  // A key's numbers as numbers, whichever BSON type they were created with (a Long reads as a bigint here).
  const text = (key: unknown) => JSON.stringify(key, (_, v: unknown) => (typeof v === 'bigint' ? Number(v) : v));
  const indexes = found.map((i) => ({ ...(i.spec ?? i), building: i.building === true }));
  const building = indexes.filter((i) => i.building).map((i) => text(i.key));
  const keys = indexes.filter((i) => i.unique === true && !building.includes(text(i.key))).map((i) => text(i.key));
  return INDEX_SPECS.filter((spec) => !keys.includes(text(spec.key)));
};

export const missingIndexes = async (collection: Collection<Document>, blind = () => {}) =>
  notInPlace(await listed(collection, blind));

/**
 * Keeps the unique indexes in place: `check` lists them (the service's timer asks every 30 s, so a dropped index is
 * noticed within that) and builds what is missing, one check at a time. From the moment an index is seen missing
 * until it is back, `ready` rejects (IndexUnusable: creates answer 503) and `onMissing` lets the quota forget what it
 * knew (plants written meanwhile were not checked by the index). A build the server refuses because documents share a
 * key (written while the index was missing) is logged with the command that mends them; nothing in the request path
 * mends.
 */
export const indexUpkeep = (
  collection: Collection<Document>,
  options: { readonly logger: Logger; readonly namespace: string; readonly onMissing: () => void },
) => {
  const { logger, namespace } = options;
  let state: 'unknown' | 'ok' | 'missing' = 'unknown';
  let lost = false; // missing after it was in place: its return is logged too
  let running: Promise<void> | undefined;
  let reported = '';
  const unsure = () =>
    logger.warn({ namespace }, 'storage: no indexStats privilege: an index being built is taken as built');

  const build = async (): Promise<void> => {
    const missing = await missingIndexes(collection, unsure);
    if (missing.length > 0) {
      const names = missing.map((spec) => spec.name).join(', ');
      if (state === 'ok')
        logger.error(
          { namespace, missing: names },
          'storage: a unique index is missing; creates answer 503 until it is back',
        );
      lost ||= state === 'ok';
      state = 'missing';
      options.onMissing();
      let problem = '';
      for (const spec of missing) {
        await collection.createIndex(spec.key, { unique: true, name: spec.name }).catch((e: unknown) => {
          if (isUnavailable(e)) throw e; // not a refusal: the next check asks again
          problem = isDuplicateKey(e)
            ? `documents share a key of ${spec.name} (written while it was missing): run \`${REPAIR_COMMAND}\``
            : `the server refused ${spec.name}: ${e instanceof Error ? e.message.slice(0, 300) : String(e)}`;
        });
      }
      // Listed again: a build refused because another process's build of the same index came first is no problem.
      if (problem !== '' && (await missingIndexes(collection, unsure)).length > 0) {
        if (problem !== reported) logger.error({ namespace }, `storage: creates answer 503: ${problem}`);
        reported = problem;
        return;
      }
    }
    if (lost) logger.info({ namespace }, 'storage: the unique indexes are in place; serving creates again');
    [lost, state, reported] = [false, 'ok', ''];
  };

  const check = (): Promise<void> =>
    (running ??= build().finally(() => {
      running = undefined;
    }));

  return {
    check,
    ready: async () => {
      if (state === 'unknown') await check();
      else if (running !== undefined) await running; // a build under way (a first start): its outcome
      if (state !== 'ok') throw new IndexUnusable(`${namespace}: a unique index is missing`);
    },
  };
};
