import * as E from 'fp-ts/lib/Either.js';
import * as TE from 'fp-ts/lib/TaskEither.js';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { storageUnavailable } from '../../application/errors.js';
import type { PlantRepository } from '../../application/ports/plant-repository.js';
import { checkReadiness } from '../../application/use-cases/check-readiness.js';
import { downRepository, downTokenStore, tokensFrom } from '../support/fakes.js';
import { memoryPlantRepository } from '../../adapters/storage/memory/memory-plant-repository.js';
import { sleep } from '../support/wait.js';

const test = suite('check readiness');

/** A store whose ping never settles, counting the pings it was asked for. */
const hungStore = () => {
  let pings = 0;
  const plants: PlantRepository = {
    ...downRepository,
    ping: () => {
      pings += 1;
      return new Promise(() => undefined);
    },
  };
  return { plants, pings: () => pings };
};

test('a backend that hangs is reported not ready at the readiness bound', async () => {
  const { plants } = hungStore();
  const ready = checkReadiness({ plants, tokens: tokensFrom({}), timeoutMs: 20 });
  assert.equal(await ready(), ['storage']);
});

test('every backend is asked in parallel and named when down', async () => {
  const { plants } = hungStore();
  assert.equal(await checkReadiness({ plants, tokens: downTokenStore, timeoutMs: 20 })(), ['storage', 'token store']);
});

test('answering backends make the service ready', async () => {
  assert.equal(await checkReadiness({ plants: memoryPlantRepository(), tokens: tokensFrom({}) })(), []);
});

test('checks that come while a ping is still running share it: a hung backend gets one ping at a time', async () => {
  const store = hungStore();
  const ready = checkReadiness({ plants: store.plants, tokens: tokensFrom({}), timeoutMs: 20 });
  await Promise.all([ready(), ready(), ready()]);
  await ready();
  assert.is(store.pings(), 1);
});

test('a ping that throws is not ready, and the next check pings again', async () => {
  let pings = 0;
  const plants: PlantRepository = {
    ...downRepository,
    ping: () => {
      pings += 1;
      return pings === 1 ? Promise.reject(new Error('index cannot be built')) : TE.right(undefined)();
    },
  };
  const ready = checkReadiness({ plants, tokens: tokensFrom({}), reuseMs: 0 });
  assert.equal(await ready(), ['storage']);
  assert.equal(await ready(), []);
  assert.ok(E.isLeft(await downRepository.ping()), 'sanity: the down fake is down');
  assert.is(storageUnavailable._tag, 'StorageUnavailable');
});

/** A store that answers its pings at once, counting them. */
const countingStore = () => {
  let pings = 0;
  const plants: PlantRepository = {
    ...downRepository,
    ping: () => {
      pings += 1;
      return TE.right(undefined)();
    },
  };
  return { plants, pings: () => pings };
};

test('an answer is reused within the reuse window: 200 checks back to back ping each backend once', async () => {
  const store = countingStore();
  const ready = checkReadiness({ plants: store.plants, tokens: tokensFrom({}) });
  for (let i = 0; i < 200; i++) assert.equal(await ready(), []);
  assert.is(store.pings(), 1);
});

test('after the reuse window, the backends are pinged again', async () => {
  const store = countingStore();
  const ready = checkReadiness({ plants: store.plants, tokens: tokensFrom({}), reuseMs: 20 });
  await ready();
  await sleep(40); // time is what is under test: the reuse window (20 ms) passes; a lower bound, it cannot come early
  await ready();
  assert.is(store.pings(), 2);
});

test.run();
