import fc from 'fast-check';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { runScenario, scenarioArbitrary, type ModelOptions } from './quota-model.js';

/**
 * The bound's model test (quota-model.ts): 20,000 schedules by default (QUOTA_MODEL_RUNS), each a scenario of
 * creates, deletes, restarts with other bounds and the passing of time over three processes, with lost replies,
 * timeouts and crashes, in an order the scheduler chooses. A failure prints the command that replays it.
 *
 * Bugs put in on purpose, each found in 10 of 10 runs (seeds 1-10; schedules to the first counterexample): the repair
 * without its wait (1,566-7,098), the id read before the count and not after (27-645), a look again only on
 * `top > max` (144-1,765), a delete refreshing the look (11-368), a clean look recorded while outside plants remain,
 * at the load (149-8,668) or at the glance (142-11,283), and index checks every 60 s against the repair's wait for
 * 30 s (29-395).
 */
const RUNS = Number(process.env['QUOTA_MODEL_RUNS'] ?? '') || 20_000;
const SEED = process.env['QUOTA_MODEL_SEED'];
const PATH = process.env['QUOTA_MODEL_PATH'];

const property = (options: ModelOptions) =>
  fc.asyncProperty(fc.scheduler(), scenarioArbitrary, async (s, scenario) => {
    const violation = await runScenario(s, scenario, options);
    if (violation !== undefined)
      throw new Error(
        `${violation}\nschedule:\n${s
          .report()
          .map((t) => `  ${t.label}`)
          .join('\n')}`,
      );
  });

const replay = (seed: number, path: string | null | undefined) =>
  `QUOTA_MODEL_SEED=${seed}${path ? ` QUOTA_MODEL_PATH=${path}` : ''} node dist/test/support/run-tests.js 'quota-model\\.test\\.js$'`;

test('the bound holds in every schedule of three processes with faults, restarts and bound changes', async () => {
  const started = performance.now();
  const details = await fc.check(property({}), {
    numRuns: SEED === undefined ? RUNS : 1,
    ...(SEED === undefined ? {} : { seed: Number(SEED), ...(PATH === undefined ? {} : { path: PATH }) }),
  });
  const seconds = (performance.now() - started) / 1000;
  if (details.failed) {
    const error =
      details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance);
    assert.unreachable(
      `found after ${details.numRuns} schedules in ${seconds.toFixed(1)} s; replay with: ${replay(details.seed, details.counterexamplePath)}\n${error}`,
    );
  }
  if (SEED === undefined) assert.is(details.numRuns, RUNS);
  console.log(`  quota model: ${details.numRuns} schedules in ${seconds.toFixed(1)} s`);
});

test('the model finds a counterexample when a clean look is trusted forever (RULE 1 without its expiry)', async () => {
  // A fixed seed and its own number of runs (it stops at the first counterexample: found within 20 schedules).
  const details = await fc.check(property({ lookTtlMs: Number.POSITIVE_INFINITY }), { numRuns: 2000, seed: 1 });
  assert.ok(details.failed, 'a design that never looks again must break the bound after a change of bounds');
  const error = details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance);
  assert.match(error, /under the bound/);
});

test("the model finds a counterexample when the index checks are slower than the repair's wait assumes", async () => {
  // The processes list the indexes every 60 s, the repair waits as `timings` derives for 30 s: a stale timing (found
  // within 200 schedules at this seed).
  const details = await fc.check(property({ indexCheckMs: 60_000 }), { numRuns: 2000, seed: 1 });
  assert.ok(details.failed, 'a repair that moves plants before every process noticed must break the bound');
  const error = details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance);
  assert.match(error, /under the bound/);
  console.log(`  stale index check: found after ${details.numRuns} schedules`);
});

test.run();
