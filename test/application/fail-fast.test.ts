import * as E from 'fp-ts/lib/Either.js';
import * as TE from 'fp-ts/lib/TaskEither.js';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { storageContended, storageUnavailable } from '../../application/errors.js';
import type { PlantRepository } from '../../application/ports/plant-repository.js';
import type { RateLimiter } from '../../application/ports/rate-limiter.js';
import { backendBreakers, redact } from '../../application/fail-fast/breakers.js';
import { failFastLimiter, failFastPlants } from '../../application/fail-fast/guards.js';
import { memoryPlantRepository } from '../../adapters/storage/memory/memory-plant-repository.js';
import type { BackendMetrics } from '../../application/ports/backend-metrics.js';
import { serviceMetrics } from '../../adapters/observability/metrics.js';
import { Owner } from '../../domain/plant.js';
import { parseExposition } from '../support/prometheus-text.js';
import { aPlant, freshOwner } from '../support/fixtures.js';
import { eventually } from '../support/wait.js';

const test = suite('fail fast: a breaker per backend, opened by its failures only; outages logged once, throttled');

interface Line {
  readonly level: string;
  readonly fields: Record<string, unknown>;
  readonly message: string;
}

const harness = (throttleMs = 10_000, metrics?: BackendMetrics) => {
  const lines: Line[] = [];
  const at = (level: string) => (fields: object, message: string) =>
    lines.push({ level, fields: fields as Record<string, unknown>, message });
  let clock = 1_000_000;
  const breakers = backendBreakers({
    logger: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') },
    throttleMs,
    now: () => clock,
    ...(metrics === undefined ? {} : { metrics }),
  });
  return { breakers, lines, advance: (ms: number) => (clock += ms) };
};

test('an outage is one warning with its reason, however many calls fail, and one line when it ends', () => {
  const { breakers, lines, advance } = harness();
  breakers.answered('storage');
  for (let i = 0; i < 100; i++) breakers.failed('storage', 'no answer (gave up after 2000 ms)');
  advance(3_500);
  breakers.answered('storage');
  breakers.answered('storage');
  assert.equal(lines, [
    {
      level: 'warn',
      fields: { backend: 'storage', reason: 'no answer (gave up after 2000 ms)' },
      message: 'storage unavailable',
    },
    { level: 'info', fields: { backend: 'storage', downForMs: 3_500 }, message: 'storage recovered' },
  ]);
});

test("the driver's own recent report is the reason; credentials in it are masked", () => {
  const { breakers, lines } = harness();
  breakers.driverError('token store', 'connect ECONNREFUSED for redis://admin:hunter2@cache:6379');
  breakers.failed('token store', 'no answer (gave up after 1 ms)');
  assert.is(lines[0]?.fields['reason'], 'connect ECONNREFUSED for redis://***@cache:6379');
  assert.not.match(JSON.stringify(lines), /hunter2/);
  assert.is(redact('mongodb://u:p@h1,h2/db'), 'mongodb://***@h1,h2/db');
});

test("an outage line waits briefly for the driver's reason when the failure is seen first", async () => {
  const lines: Line[] = [];
  const at = (level: string) => (fields: object, message: string) =>
    lines.push({ level, fields: fields as Record<string, unknown>, message });
  const breakers = backendBreakers({
    logger: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') },
    reasonWaitMs: 30,
  });
  breakers.failed('token store', 'no answer (gave up after 0 ms)');
  assert.is(lines.length, 0, 'held for the reason');
  breakers.driverError('token store', 'the connection to Redis closed');
  await eventually('the held line is written once its wait is over', () => lines.length > 0);
  assert.equal(
    lines.map((l) => [l.message, l.fields['reason']]),
    [['token store unavailable', 'the connection to Redis closed']],
  );
  breakers.answered('token store');
  breakers.failed('storage', 'no answer (gave up after 2000 ms)');
  breakers.answered('storage');
  assert.equal(
    lines.slice(2).map((l) => [l.message, l.fields['reason']]),
    [
      ['storage unavailable', 'no answer (gave up after 2000 ms)'],
      ['storage recovered', undefined],
    ],
    'a recovery first writes the held line, so the two come in order',
  );
});

test('a flapping backend logs at most one outage per throttle window, and counts the others', () => {
  const { breakers, lines, advance } = harness(10_000);
  for (let i = 0; i < 20; i++) {
    breakers.failed('token store', 'down');
    advance(100);
    breakers.answered('token store');
    advance(100);
  }
  assert.equal(
    lines.map((l) => l.message),
    ['token store unavailable', 'token store recovered'],
    'the first outage and its end; the 19 after it within 4 s are held back',
  );
  advance(10_000);
  breakers.failed('token store', 'down');
  assert.is(lines.length, 3);
  assert.is(lines[2]?.fields['outagesNotLogged'], 19);
});

test('each backend is tracked apart', () => {
  const { breakers, lines } = harness();
  breakers.failed('storage', 'a');
  breakers.failed('rate limiter', 'b');
  assert.equal(
    lines.map((l) => l.message),
    ['storage unavailable', 'rate limiter unavailable'],
  );
});

test('the decorated ports time every call into the metrics and report availability', async () => {
  const metrics = serviceMetrics();
  const { breakers, lines } = harness(10_000, metrics.backends);
  const failFast = { breakers, metrics: metrics.backends };
  const owner = Owner.from('o');
  assert.ok(owner._tag === 'Right');
  let down = false;
  const memory = memoryPlantRepository();
  const flaky: PlantRepository = {
    ...memory,
    page: (o, a, l) => (down ? TE.left(storageUnavailable) : memory.page(o, a, l)),
  };
  const plants = failFastPlants(flaky, failFast);
  await plants.page(owner.right, undefined, 10)();
  down = true;
  await plants.page(owner.right, undefined, 10)();
  let allowed = false;
  const limiter: RateLimiter = {
    consume: () => async () => E.right({ allowed, limit: 1, remaining: 0, resetSeconds: 1 }),
  };
  await failFastLimiter(limiter, failFast).consume('k')();
  allowed = true;
  await failFastLimiter(limiter, failFast).consume('k')();
  const m = parseExposition(await metrics.exposition.scrape());
  assert.is(
    m.value('plantstore_backend_call_duration_seconds_count', { backend: 'storage', operation: 'page', outcome: 'ok' }),
    1,
  );
  assert.is(
    m.value('plantstore_backend_call_duration_seconds_count', {
      backend: 'storage',
      operation: 'page',
      outcome: 'unavailable',
    }),
    1,
  );
  assert.is(m.value('plantstore_backend_up', { backend: 'storage' }), 0);
  assert.is(m.value('plantstore_rate_limit_rejections_total'), 1);
  assert.match(String(lines[0]?.fields['reason']), /^no answer \(gave up after \d+ ms\)$/);
});

/** A memory store behind a switch: the calls that reach it are counted, and while it is down each hangs until let go. */
const switchedStore = () => {
  const memory = memoryPlantRepository();
  const state = { down: false, reached: 0, waiting: [] as Array<() => void> };
  const store: PlantRepository = {
    ...memory,
    insert: (o, p, m) => async () => {
      state.reached += 1;
      if (!state.down) return memory.insert(o, p, m)();
      await new Promise<void>((resolve) => state.waiting.push(resolve));
      return E.left(storageUnavailable);
    },
  };
  const release = () => state.waiting.splice(0).forEach((go) => go());
  return { store, state, release };
};

test('while storage is known down, calls fail at once without reaching it, but for one probe a second', async () => {
  const { breakers, advance } = harness();
  const { store, state, release } = switchedStore();
  const plants = failFastPlants(store, { breakers, metrics: undefined });
  const owner = freshOwner();
  const create = (id: number) => plants.insert(owner, aPlant(BigInt(id)))();
  state.down = true;
  const first = create(1);
  release();
  assert.equal(await first, E.left(storageUnavailable)); // known down from here
  state.reached = 0;
  const probe = create(2);
  const refused = await Promise.all([3, 4, 5, 6, 7].map(create));
  assert.ok(refused.every((r) => E.isLeft(r) && r.left === storageUnavailable));
  assert.is(state.reached, 1, 'only the probe reached the store');
  release();
  assert.ok(E.isLeft(await probe));
  assert.ok(E.isLeft(await create(8)));
  assert.is(state.reached, 1, 'no probe in the second after one');
  advance(1000);
  const secondProbe = create(8);
  assert.is(state.reached, 2, 'a second later, the next call probes');
  state.down = false;
  release();
  assert.ok(E.isLeft(await secondProbe), 'it had reached the store before its return');
  advance(1000);
  assert.ok(E.isRight(await create(9)), 'the next probe finds the store back');
  const resumed = await Promise.all([10, 11].map(create));
  assert.ok(resumed.every(E.isRight), 'once a probe answers, every call reaches the store again');
  assert.is(state.reached, 5);
});

test('one call past its deadline while others are answered is not an outage: the calls after it reach the store', async () => {
  const { breakers } = harness();
  const memory = memoryPlantRepository();
  let reached = 0;
  const slow: Array<() => void> = [];
  const store: PlantRepository = {
    ...memory,
    insert: (o, p, m) => async () => {
      reached += 1;
      if (p.id !== 1n) return memory.insert(o, p, m)();
      await new Promise<void>((resolve) => slow.push(resolve));
      return E.left(storageUnavailable); // its deadline passed, as an owner's long load's would
    },
  };
  const plants = failFastPlants(store, { breakers, metrics: undefined });
  const owner = freshOwner();
  const create = (id: number) => plants.insert(owner, aPlant(BigInt(id)))();
  const late = create(1);
  assert.ok(E.isRight(await create(2)), 'answered while the first is under way');
  slow.splice(0).forEach((go) => go());
  assert.equal(await late, E.left(storageUnavailable));
  const after = await Promise.all([3, 4, 5].map(create));
  assert.ok(after.every(E.isRight), 'no call refused');
  assert.is(reached, 5, 'every call reached the store');
});

test('a store that answers "full" is up: calls after it still reach the store', async () => {
  const { breakers } = harness();
  const memory = memoryPlantRepository({ maxPlants: 1 });
  let reached = 0;
  const counted: PlantRepository = { ...memory, insert: (o, p, m) => (reached++, memory.insert(o, p, m)) };
  const plants = failFastPlants(counted, { breakers, metrics: undefined });
  const owner = freshOwner();
  const create = (id: number) => plants.insert(owner, aPlant(BigInt(id)))();
  assert.ok(E.isRight(await create(1)));
  assert.ok(E.isLeft(await create(2)), 'full');
  await Promise.all([create(3), create(4)]);
  assert.is(reached, 4);
});

/** A memory store whose calls are counted, and which answers one owner's calls as `answer` says. */
const oneOwnerStore = (victim: string, answer: 'throw' | 'contended') => {
  const memory = memoryPlantRepository();
  const state = { reached: 0 };
  const store: PlantRepository = {
    ...memory,
    insert: (o, p, m) => async () => {
      state.reached += 1;
      if (o !== victim) return memory.insert(o, p, m)();
      if (answer === 'throw') throw new Error('a stored plant document has an unexpected shape');
      return E.left(storageContended);
    },
  };
  return { store, state };
};

for (const answer of ['throw', 'contended'] as const) {
  test(`one owner's ${answer === 'throw' ? 'fault (a throw, a 500)' : 'colliding creates (a contended 503)'} opens no breaker: every other call reaches the store`, async () => {
    const { breakers, lines } = harness();
    const victim = freshOwner();
    const { store, state } = oneOwnerStore(victim, answer);
    const plants = failFastPlants(store, { breakers, metrics: undefined });
    const outcome = await plants
      .insert(victim, aPlant(1n))()
      .catch((e: unknown) => e);
    if (answer === 'throw') assert.instance(outcome, Error);
    else assert.equal(outcome, E.left(storageContended));
    const others = await Promise.all([2, 3, 4].map((id) => plants.insert(freshOwner(), aPlant(BigInt(id)))()));
    assert.ok(others.every(E.isRight), 'none refused');
    assert.is(state.reached, 4, 'every call reached the store');
    assert.equal(lines, [], 'no outage logged');
  });
}

test.run();
