import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { attemptOfKeyPattern, coalescing } from '../../adapters/storage/mongodb/owner-slots.js';

/** The pieces of the MongoDB quota (owner-slots.ts) that need no server; the rest runs in the storage contract. */
const test = suite('owner-slots: shared reads and duplicate keys');

/** A read that records each call's asks and resolves when the test says so. */
const controlledRead = () => {
  const calls: Array<{ asks: readonly string[]; resolve: (n: number) => void }> = [];
  const read = (asks: readonly string[]) => new Promise<number>((resolve) => calls.push({ asks: [...asks], resolve }));
  return { calls, shared: coalescing<string, number>(read) };
};
const tick = () => new Promise((r) => setImmediate(r));

test('a caller with nothing running reads at once', async () => {
  const { calls, shared } = controlledRead();
  const answer = shared('owner', 'a');
  assert.equal(
    calls.map((c) => c.asks),
    [['a']],
  );
  calls[0]?.resolve(7);
  assert.is(await answer, 7);
});

test('callers arriving while a read runs share the next read, never the running one', async () => {
  const { calls, shared } = controlledRead();
  const first = shared('owner', 'a');
  const later = [shared('owner', 'b'), shared('owner', 'c')];
  assert.is(calls.length, 1, 'the later callers wait for the running read to settle');
  calls[0]?.resolve(1);
  assert.is(await first, 1);
  await tick();
  assert.equal(
    calls.map((c) => c.asks),
    [['a'], ['b', 'c']],
    'one read for both, started after they arrived',
  );
  calls[1]?.resolve(2);
  assert.equal(await Promise.all(later), [2, 2]);
});

test('reads of different keys do not wait for one another', async () => {
  const { calls, shared } = controlledRead();
  void shared('a', 'x');
  void shared('b', 'y');
  assert.equal(
    calls.map((c) => c.asks),
    [['x'], ['y']],
  );
});

test('a failed read fails its callers only; the next caller reads again', async () => {
  const reads: string[][] = [];
  const shared = coalescing<string, number>(async (asks) => {
    reads.push([...asks]);
    if (reads.length === 1) throw new Error('down');
    return 3;
  });
  await shared('owner', 'a').then(
    () => assert.unreachable('the first read failed'),
    (e: Error) => assert.is(e.message, 'down'),
  );
  assert.is(await shared('owner', 'b'), 3);
});

test('a duplicate key names the slot index only when MongoDB says so; FerretDB says nothing', () => {
  assert.is(attemptOfKeyPattern({ owner: 1, slot: 1 }), 'slot-taken');
  assert.is(attemptOfKeyPattern({ owner: 1, id: 1 }), 'taken');
  assert.is(attemptOfKeyPattern(undefined), 'taken');
});

test.run();
