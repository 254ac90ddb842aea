import * as E from 'fp-ts/lib/Either.js';
import * as assert from 'uvu/assert';
import type { PlantRepository } from '../../application/ports/plant-repository.js';
import { INT64_MAX, INT64_MIN } from '../../domain/int64.js';
import type { Owner, Plant, PlantId } from '../../domain/plant.js';
import { aPlant, freshOwner, right, shuffled } from '../support/fixtures.js';
import { suiteWith, type Setup } from '../support/suites.js';

export interface RepositoryUnderTest {
  readonly repo: PlantRepository;
  /**
   * Three instances of the adapter on one store, as three service processes have (`repo` first). Memory storage
   * serves one process: its three are the one repository.
   */
  readonly peers: readonly [PlantRepository, PlantRepository, PlantRepository];
  /** What happens to a store behind the adapter's back, for the transitions the bound must survive. */
  readonly drift: StoreDrift;
  readonly teardown: () => Promise<void>;
}

export interface StoreDrift {
  /** Drops the index that bounds an owner's plants, under the running instances (memory storage has none). */
  readonly dropQuotaIndex: () => Promise<void>;
  /** Resolves once every instance has had the time to notice what was dropped, and the indexes are back. */
  readonly indexesBack: () => Promise<void>;
  /** Runs the documented repair (MongoDB: what the service cannot rebuild by itself), then waits as indexesBack. */
  readonly repaired: () => Promise<void>;
}

/** How a storage adapter is set up for the suite, or the reason it cannot run on this machine (skipped). */
export type RepositorySetup = Setup<RepositoryUnderTest>;

/** Reads every plant of an owner by following pages, as a client following next links would. */
export const readAll = async (repo: PlantRepository, owner: Owner, pageSize: number): Promise<Plant[]> => {
  const all: Plant[] = [];
  let after: PlantId | undefined;
  for (;;) {
    const page = await right(repo.page(owner, after, pageSize));
    all.push(...page.plants);
    const last = page.plants[page.plants.length - 1];
    if (!page.more || last === undefined) return all;
    after = last.id;
  }
};

const ids = (plants: readonly Plant[]) => plants.map((p) => p.id);

/**
 * The storage port's contract: every PlantRepository adapter runs this same suite. Each test works in owners of
 * its own, so the suite needs no wiping and runs against a shared server.
 */
export const plantRepositoryContract = (adapter: string, setup: RepositorySetup): void => {
  const { test, subject, run } = suiteWith(`PlantRepository contract [${adapter}]`, setup);
  const repo = (ctx: Parameters<typeof subject>[0]): PlantRepository => subject(ctx).repo;
  const peers = (ctx: Parameters<typeof subject>[0]) => subject(ctx).peers;
  /** `n` creates of distinct ids from `first`, all at once, spread over the instances in turn. */
  const concurrentCreates = (
    instances: readonly PlantRepository[],
    owner: Owner,
    first: bigint,
    n: number,
    max: number,
  ) =>
    Promise.all(
      Array.from({ length: n }, (_, i) =>
        right((instances[i % instances.length] as PlantRepository).insert(owner, aPlant(first + BigInt(i)), max)),
      ),
    );
  const stored = async (ctx: Parameters<typeof subject>[0], owner: Owner) => ids(await readAll(repo(ctx), owner, 1000));

  test('an inserted plant is read back exactly, with and without a tag', async (ctx) => {
    const owner = freshOwner();
    assert.equal(await right(repo(ctx).insert(owner, aPlant(1n, 'Fern 🌿', 'green'))), { _tag: 'Inserted' });
    assert.equal(await right(repo(ctx).insert(owner, aPlant(2n, 'Cactus'))), { _tag: 'Inserted' });
    const page = await right(repo(ctx).page(owner, undefined, 10));
    assert.equal(page, { plants: [aPlant(1n, 'Fern 🌿', 'green'), aPlant(2n, 'Cactus')], more: false });
    assert.not.ok('tag' in (page.plants[1] as object), 'an absent tag stays absent');
  });

  test('inserting an id the owner has reports the stored plant and changes nothing', async (ctx) => {
    const owner = freshOwner();
    await right(repo(ctx).insert(owner, aPlant(7n, 'Fern', 'a')));
    assert.equal(await right(repo(ctx).insert(owner, aPlant(7n, 'Palm'))), {
      _tag: 'Exists',
      stored: aPlant(7n, 'Fern', 'a'),
    });
    assert.equal(await right(repo(ctx).insert(owner, aPlant(7n, 'Fern', 'a'))), {
      _tag: 'Exists',
      stored: aPlant(7n, 'Fern', 'a'),
    });
    assert.equal((await right(repo(ctx).page(owner, undefined, 10))).plants, [aPlant(7n, 'Fern', 'a')]);
  });

  test('ids are kept exact and ordered numerically across the whole int64 range', async (ctx) => {
    const owner = freshOwner();
    const edge = [
      INT64_MIN,
      INT64_MIN + 1n,
      -(2n ** 53n) - 1n,
      -(2n ** 53n),
      -1n,
      0n,
      1n,
      9n,
      10n,
      2n ** 31n,
      2n ** 32n,
      2n ** 53n,
      2n ** 53n + 1n,
      INT64_MAX - 1n,
      INT64_MAX,
    ];
    for (const id of shuffled(edge)) await right(repo(ctx).insert(owner, aPlant(id)));
    const all = await readAll(repo(ctx), owner, 4);
    assert.equal(
      ids(all),
      [...edge].sort((a, b) => (a < b ? -1 : 1)),
    );
    assert.is(all.find((p) => p.id === 2n ** 53n + 1n)?.name, `plant ${2n ** 53n + 1n}`);
  });

  test('a page holds at most limit plants after the cursor, and says whether more follow', async (ctx) => {
    const owner = freshOwner();
    for (const id of [1n, 2n, 3n, 4n, 5n]) await right(repo(ctx).insert(owner, aPlant(id)));
    const first = await right(repo(ctx).page(owner, undefined, 2));
    assert.equal(ids(first.plants), [1n, 2n]);
    assert.ok(first.more);
    const middle = await right(repo(ctx).page(owner, 2n as PlantId, 2));
    assert.equal(ids(middle.plants), [3n, 4n]);
    assert.ok(middle.more);
    const last = await right(repo(ctx).page(owner, 4n as PlantId, 2));
    assert.equal(ids(last.plants), [5n]);
    assert.not.ok(last.more);
    const exact = await right(repo(ctx).page(owner, 3n as PlantId, 2));
    assert.equal(ids(exact.plants), [4n, 5n]);
    assert.not.ok(exact.more, 'a page that ends on the last plant says no more follow');
    const between = await right(repo(ctx).page(owner, 0n as PlantId, 1));
    assert.equal(ids(between.plants), [1n], 'a cursor need not be a stored id');
  });

  test('an owner with no plants has an empty last page', async (ctx) => {
    assert.equal(await right(repo(ctx).page(freshOwner(), undefined, 10)), { plants: [], more: false });
  });

  test('following pages yields every plant once while others are created and deleted in between', async (ctx) => {
    const owner = freshOwner();
    const initial = Array.from({ length: 60 }, (_, i) => BigInt(i * 10));
    for (const id of initial) await right(repo(ctx).insert(owner, aPlant(id)));
    const deletedAhead = new Set([250n, 400n, 590n]);
    const seen: PlantId[] = [];
    let after: PlantId | undefined;
    let round = 0;
    for (;;) {
      const page = await right(repo(ctx).page(owner, after, 7));
      seen.push(...ids(page.plants));
      const last = page.plants[page.plants.length - 1];
      if (!page.more || last === undefined) break;
      after = last.id;
      round++;
      // Between pages: delete one already served and one not yet served, add one behind and one ahead.
      await right(repo(ctx).remove(owner, (BigInt(round) * 10n) as PlantId));
      for (const id of deletedAhead) if (id > after && round === 2) await right(repo(ctx).remove(owner, id as PlantId));
      await right(repo(ctx).insert(owner, aPlant(-BigInt(round))));
      await right(repo(ctx).insert(owner, aPlant(1000n + BigInt(round))));
    }
    assert.equal(new Set(seen).size, seen.length, 'no plant is served twice');
    for (const id of initial) {
      if (!deletedAhead.has(id)) assert.ok(seen.includes(id as PlantId), `plant ${id} present throughout was served`);
    }
    for (const id of deletedAhead)
      assert.not.ok(seen.includes(id as PlantId), `plant ${id} deleted before its page was not served`);
    assert.equal(
      seen,
      [...seen].sort((a, b) => (a < b ? -1 : 1)),
      'served in ascending order',
    );
  });

  test("owners are isolated: the same id under two owners, and one owner's delete leaves the other's plant", async (ctx) => {
    const a = freshOwner('a');
    const b = freshOwner('b');
    await right(repo(ctx).insert(a, aPlant(7n, 'of a')));
    assert.equal(await right(repo(ctx).insert(b, aPlant(7n, 'of b'))), { _tag: 'Inserted' });
    assert.equal((await right(repo(ctx).page(a, undefined, 10))).plants, [aPlant(7n, 'of a')]);
    assert.equal((await right(repo(ctx).page(b, undefined, 10))).plants, [aPlant(7n, 'of b')]);
    assert.ok(await right(repo(ctx).remove(a, 7n as PlantId)));
    assert.equal((await right(repo(ctx).page(b, undefined, 10))).plants, [aPlant(7n, 'of b')]);
    assert.not.ok(await right(repo(ctx).remove(a, 7n as PlantId)));
  });

  test('remove reports whether the owner had the plant', async (ctx) => {
    const owner = freshOwner();
    await right(repo(ctx).insert(owner, aPlant(-5n)));
    assert.ok(await right(repo(ctx).remove(owner, -5n as PlantId)));
    assert.not.ok(await right(repo(ctx).remove(owner, -5n as PlantId)), 'already deleted');
    assert.not.ok(await right(repo(ctx).remove(owner, 12345n as PlantId)), 'never existed');
    assert.equal(await right(repo(ctx).page(owner, undefined, 10)), { plants: [], more: false });
  });

  test('of 20 concurrent inserts of one id exactly one stores, and the others see that plant', async (ctx) => {
    const owner = freshOwner();
    const outcomes = await Promise.all(
      Array.from({ length: 20 }, (_, i) => right(repo(ctx).insert(owner, aPlant(2n ** 60n, `racer ${i}`)))),
    );
    const winners = outcomes.flatMap((o, i) => (o._tag === 'Inserted' ? [i] : []));
    assert.is(winners.length, 1);
    const stored = aPlant(2n ** 60n, `racer ${winners[0]}`);
    for (const o of outcomes) if (o._tag === 'Exists') assert.equal(o.stored, stored);
    assert.equal((await right(repo(ctx).page(owner, undefined, 10))).plants, [stored]);
  });

  test('an owner at its bound is refused with its count, and nothing changes', async (ctx) => {
    const owner = freshOwner();
    for (const id of [1n, 2n, 3n]) {
      assert.equal(await right(repo(ctx).insert(owner, aPlant(id), 3)), { _tag: 'Inserted', count: Number(id) });
    }
    assert.equal(await right(repo(ctx).insert(owner, aPlant(4n), 3)), { _tag: 'OwnerFull', count: 3 });
    assert.equal(ids((await right(repo(ctx).page(owner, undefined, 10))).plants), [1n, 2n, 3n]);
  });

  test('at its bound an owner still gets Exists for an id it has, identical or not', async (ctx) => {
    const owner = freshOwner();
    await right(repo(ctx).insert(owner, aPlant(1n, 'Fern'), 2));
    await right(repo(ctx).insert(owner, aPlant(2n, 'Moss'), 2));
    const stored = { _tag: 'Exists', stored: aPlant(1n, 'Fern'), count: 2 };
    assert.equal(await right(repo(ctx).insert(owner, aPlant(1n, 'Fern'), 2)), stored);
    assert.equal(await right(repo(ctx).insert(owner, aPlant(1n, 'Palm'), 2)), stored);
    assert.equal((await right(repo(ctx).page(owner, undefined, 10))).plants, [aPlant(1n, 'Fern'), aPlant(2n, 'Moss')]);
  });

  test('a removed plant frees its room at once, wherever it was', async (ctx) => {
    const owner = freshOwner();
    for (const id of [1n, 2n, 3n, 4n]) await right(repo(ctx).insert(owner, aPlant(id), 4));
    for (const [gone, next] of [
      [2n, 5n],
      [1n, 6n],
      [6n, 7n],
      [7n, 8n],
    ] as const) {
      assert.ok(await right(repo(ctx).remove(owner, gone as PlantId)));
      assert.equal(await right(repo(ctx).insert(owner, aPlant(next), 4)), { _tag: 'Inserted', count: 4 }, `${next}`);
      assert.equal(await right(repo(ctx).insert(owner, aPlant(100n + next), 4)), { _tag: 'OwnerFull', count: 4 });
    }
    assert.equal(ids((await right(repo(ctx).page(owner, undefined, 10))).plants), [3n, 4n, 5n, 8n]);
  });

  test('one owner at its bound leaves every other owner its own room', async (ctx) => {
    const [a, b] = [freshOwner('a'), freshOwner('b')];
    await right(repo(ctx).insert(a, aPlant(1n), 1));
    assert.equal(await right(repo(ctx).insert(a, aPlant(2n), 1)), { _tag: 'OwnerFull', count: 1 });
    assert.equal(await right(repo(ctx).insert(b, aPlant(2n), 1)), { _tag: 'Inserted', count: 1 });
  });

  test('an owner that keeps more than a lowered bound is refused until it is below it', async (ctx) => {
    const owner = freshOwner();
    for (const id of [1n, 2n, 3n, 4n, 5n]) await right(repo(ctx).insert(owner, aPlant(id)));
    assert.equal(await right(repo(ctx).insert(owner, aPlant(6n), 3)), { _tag: 'OwnerFull', count: 5 });
    for (const id of [1n, 2n]) await right(repo(ctx).remove(owner, id as PlantId));
    assert.equal(await right(repo(ctx).insert(owner, aPlant(6n), 3)), { _tag: 'OwnerFull', count: 3 });
    await right(repo(ctx).remove(owner, 3n as PlantId));
    assert.equal(await right(repo(ctx).insert(owner, aPlant(6n), 3)), { _tag: 'Inserted', count: 3 });
    assert.equal(await right(repo(ctx).insert(owner, aPlant(7n), 3)), { _tag: 'OwnerFull', count: 3 });
  });

  test('of 50 concurrent inserts of distinct ids at a bound of 10, over three instances, exactly 10 store', async (ctx) => {
    const owner = freshOwner();
    const outcomes = await concurrentCreates(peers(ctx), owner, 0n, 50, 10);
    const inserted = outcomes.flatMap((o, i) => (o._tag === 'Inserted' ? [BigInt(i)] : []));
    assert.is(inserted.length, 10);
    for (const o of outcomes) assert.ok(o._tag === 'Inserted' || o._tag === 'OwnerFull', JSON.stringify(o));
    assert.equal(ids((await right(repo(ctx).page(owner, undefined, 100))).plants), inserted);
  });

  test('of 50 concurrent inserts at a bound of 10 in one instance, the refused ones see the count 10', async (ctx) => {
    const owner = freshOwner();
    const outcomes = await concurrentCreates([repo(ctx)], owner, 0n, 50, 10);
    assert.is(outcomes.filter((o) => o._tag === 'Inserted').length, 10);
    for (const o of outcomes) if (o._tag !== 'Inserted') assert.equal(o, { _tag: 'OwnerFull', count: 10 });
  });

  test('a bound turned on over plants stored without one: of 20 concurrent creates over three instances, exactly enough store to reach it', async (ctx) => {
    const owner = freshOwner();
    for (const id of [1n, 2n, 3n]) await right(repo(ctx).insert(owner, aPlant(-id)));
    const outcomes = await concurrentCreates(peers(ctx), owner, 100n, 20, 6);
    assert.is(outcomes.filter((o) => o._tag === 'Inserted').length, 3);
    const kept = await stored(ctx, owner);
    assert.is(kept.length, 6);
    for (const id of [-3n, -2n, -1n])
      assert.ok(kept.includes(id as PlantId), `plant ${id} from before the bound is kept`);
  });

  test('a bound turned on below what an owner keeps: every concurrent create is refused with the count, and nothing is lost', async (ctx) => {
    const owner = freshOwner();
    for (let id = 1n; id <= 8n; id++) await right(repo(ctx).insert(owner, aPlant(-id)));
    const outcomes = await concurrentCreates(peers(ctx), owner, 100n, 20, 6);
    for (const o of outcomes) assert.equal(o, { _tag: 'OwnerFull', count: 8 });
    assert.is((await stored(ctx, owner)).length, 8);
    assert.equal(await right(repo(ctx).insert(owner, aPlant(-1n), 6)), {
      _tag: 'Exists',
      stored: aPlant(-1n),
      count: 8,
    });
  });

  test('a bound raised: an owner at the old bound creates up to the new one, exactly, under concurrency', async (ctx) => {
    const owner = freshOwner();
    await concurrentCreates(peers(ctx), owner, 0n, 10, 5);
    assert.is((await stored(ctx, owner)).length, 5);
    const outcomes = await concurrentCreates(peers(ctx), owner, 100n, 30, 12);
    assert.is(outcomes.filter((o) => o._tag === 'Inserted').length, 7);
    assert.is((await stored(ctx, owner)).length, 12);
  });

  test('a bound lowered from 100 to 10: an owner of 19 keeps them, is refused, and once deleted down to 9 of 20 concurrent creates one stores', async (ctx) => {
    const owner = freshOwner();
    await concurrentCreates(peers(ctx), owner, 0n, 19, 100);
    assert.is((await stored(ctx, owner)).length, 19);
    const refused = await concurrentCreates(peers(ctx), owner, 100n, 20, 10);
    for (const o of refused) assert.equal(o._tag, 'OwnerFull');
    assert.is((await stored(ctx, owner)).length, 19, 'kept over the lowered bound');
    for (let id = 0n; id < 10n; id++) assert.ok(await right(repo(ctx).remove(owner, id as PlantId)));
    const outcomes = await concurrentCreates(peers(ctx), owner, 200n, 20, 10);
    assert.is(outcomes.filter((o) => o._tag === 'Inserted').length, 1);
    assert.is((await stored(ctx, owner)).length, 10);
  });

  test('the quota index dropped under running instances: noticed and rebuilt, then of 50 concurrent creates at 10 enough store to reach 10', async (ctx) => {
    const owner = freshOwner();
    await concurrentCreates(peers(ctx), owner, 0n, 3, 10);
    await subject(ctx).drift.dropQuotaIndex();
    await subject(ctx).drift.indexesBack();
    const outcomes = await concurrentCreates(peers(ctx), owner, 100n, 50, 10);
    assert.is(outcomes.filter((o) => o._tag === 'Inserted').length, 7);
    assert.is((await stored(ctx, owner)).length, 10);
  });

  test('plants created while the quota index was missing are all kept, and after the repair the owner never grows past the bound or what it kept', async (ctx) => {
    const owner = freshOwner();
    await subject(ctx).drift.dropQuotaIndex();
    const instances = peers(ctx);
    // Stored before an instance noticed the index gone, or 503 after: either way nothing acknowledged is lost.
    const during = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        (instances[i % instances.length] as PlantRepository).insert(owner, aPlant(BigInt(i)), 10)(),
      ),
    );
    const acknowledged = during.flatMap((o, i) => (E.isRight(o) && o.right._tag === 'Inserted' ? [BigInt(i)] : []));
    // A 503 either way: the index missing, or (contended) the owner's concurrent creates taking the slots it chose.
    for (const o of during) if (E.isLeft(o)) assert.is(o.left._tag, 'StorageUnavailable');
    await subject(ctx).drift.repaired();
    const kept = await stored(ctx, owner);
    for (const id of acknowledged) assert.ok(kept.includes(id as PlantId), `acknowledged plant ${id} is kept`);
    const ceiling = Math.max(10, kept.length);
    await concurrentCreates(peers(ctx), owner, 100n, 30, 10);
    assert.is((await stored(ctx, owner)).length, ceiling);
    // Deleting below the bound gives room again, up to the bound and no further.
    const now = await stored(ctx, owner);
    for (const id of now.slice(0, now.length - 8)) assert.ok(await right(repo(ctx).remove(owner, id)));
    const after = await concurrentCreates(peers(ctx), owner, 200n, 30, 10);
    assert.is(after.filter((o) => o._tag === 'Inserted').length, 2);
    assert.is((await stored(ctx, owner)).length, 10);
  });

  test('concurrent inserts and removes at the bound never leave the owner more than its bound', async (ctx) => {
    const owner = freshOwner();
    for (let id = 0n; id < 5n; id++) await right(repo(ctx).insert(owner, aPlant(id), 5));
    const [removed, outcomes] = await Promise.all([
      Promise.all([0n, 1n, 2n].map((id) => right(repo(ctx).remove(owner, id as PlantId)))),
      Promise.all(Array.from({ length: 20 }, (_, i) => right(repo(ctx).insert(owner, aPlant(100n + BigInt(i)), 5)))),
    ]);
    assert.ok(removed.every(Boolean));
    const inserted = outcomes.filter((o) => o._tag === 'Inserted').length;
    const kept = (await right(repo(ctx).page(owner, undefined, 100))).plants.length;
    assert.is(kept, 5 - 3 + inserted, 'every acknowledged insert and remove is there');
    assert.ok(kept <= 5, `at most 5 kept, got ${kept}`);
  });

  test('creates and deletes of the same ids racing over three instances: exactly what was acknowledged is stored, within the bound', async (ctx) => {
    const owner = freshOwner();
    const instances = peers(ctx);
    const on = (i: number) => instances[i % instances.length] as PlantRepository;
    const raced = await Promise.all(
      Array.from({ length: 12 }, async (_, i) => {
        const id = BigInt(i);
        const [first, removed, second] = await Promise.all([
          right(on(i).insert(owner, aPlant(id, 'first'), 10)),
          right(on(i + 1).remove(owner, id as PlantId)),
          right(on(i + 2).insert(owner, aPlant(id, 'second'), 10)),
        ]);
        return { id, first, removed, second };
      }),
    );
    const kept = await readAll(repo(ctx), owner, 1000);
    let inserted = 0;
    for (const { id, first, removed, second } of raced) {
      const story = `${id}: ${JSON.stringify([first, removed, second], (_, v: unknown) => (typeof v === 'bigint' ? String(v) : v))}`;
      const acknowledged = [first, second].flatMap((o, k) =>
        o._tag === 'Inserted' ? [k === 0 ? 'first' : 'second'] : [],
      );
      inserted += acknowledged.length;
      if (removed) assert.ok(acknowledged.length > 0, `a plant was there to delete: ${story}`);
      for (const o of [first, second]) {
        if (o._tag === 'Exists')
          assert.ok(acknowledged.includes(o.stored.name), `Exists shows a stored plant: ${story}`);
      }
      const here = kept.filter((p) => p.id === id);
      assert.ok(here.length <= 1, story);
      if (here[0] !== undefined) assert.ok(acknowledged.includes(here[0].name), `kept as acknowledged: ${story}`);
    }
    const removed = raced.filter((r) => r.removed).length;
    assert.is(kept.length, inserted - removed, 'every acknowledged create and delete, nothing else');
    assert.ok(kept.length <= 10, `at most 10 kept, got ${kept.length}`);
  });

  test('50 concurrent inserts of distinct ids without a bound all store', async (ctx) => {
    const owner = freshOwner();
    const outcomes = await Promise.all(
      Array.from({ length: 50 }, (_, i) => right(repo(ctx).insert(owner, aPlant(BigInt(i))))),
    );
    assert.ok(outcomes.every((o) => o._tag === 'Inserted'));
    assert.is((await right(repo(ctx).page(owner, undefined, 100))).plants.length, 50);
  });

  test('ping succeeds while the store answers', async (ctx) => {
    assert.is(await right(repo(ctx).ping), undefined);
  });

  run();
};
