import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { distRoot } from './process.js';

/**
 * The runner (`npm test`) ends however the tests leave things: a test that fails while a service it started still
 * runs, or one that passes and leaves processes behind in a test process that ignores SIGTERM, ends the run within
 * seconds with the right counts and exit code, and nothing it started is left running.
 */
const test = suite('the test runner (run-tests.js)');

const GRACE_MS = 500;
/** Far above what the runner needs (its grace, 2 s for SIGTERM, a service's start), far below a hung run. */
const BOUND_MS = 30_000;

const runFixture = async (mode: string, pattern = 'support/run-tests\\.fixture\\.js$') => {
  const runner = spawn(process.execPath, [join(distRoot, 'test', 'support', 'run-tests.js'), pattern], {
    env: { ...process.env, RUN_TESTS_FIXTURE: mode, TEST_EXIT_GRACE_MS: String(GRACE_MS) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  runner.stdout.on('data', (c: Buffer) => (out += c.toString('utf8')));
  runner.stderr.on('data', (c: Buffer) => (out += c.toString('utf8')));
  let timer: NodeJS.Timeout | undefined;
  const code = await new Promise<number | null>((resolve) => {
    timer = setTimeout(() => {
      runner.kill('SIGKILL');
    }, BOUND_MS);
    runner.once('close', (c) => resolve(c));
  });
  clearTimeout(timer);
  const pids = [...out.matchAll(/^fixture started (\d+)$/gm)].map((m) => Number(m[1]));
  return { code, out, pids, last: out.trim().split('\n').at(-1) };
};

/** Whether `pid` still runs (a zombie has ended). */
const running = (pid: number): boolean => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
};

test('a test fails while a service and a process it started still run: the run ends, one failed, nothing left', async () => {
  const run = await runFixture('fails');
  // It ended by itself: a run killed at BOUND_MS has no exit code and no summary line.
  assert.is(run.last, '1 passed, 1 failed, 0 skipped', run.out);
  assert.is(run.code, 1);
  assert.match(run.out, /the failure this fixture is about/);
  assert.is(run.pids.length, 2, run.out);
  if (process.platform === 'linux') {
    for (const pid of run.pids) assert.not.ok(running(pid), `process ${pid} left running: ${run.out}`);
  }
});

test('every test passes but one leaves processes, in a test process that ignores SIGTERM: the run ends, counted as one failure', async () => {
  const run = await runFixture('leaves');
  // It ended by itself: a run killed at BOUND_MS has no exit code and no summary line.
  assert.is(run.last, '2 passed, 1 failed, 0 skipped', run.out);
  assert.is(run.code, 1);
  assert.match(run.out, /uvu had not exited 500 ms after printing its totals/);
  assert.match(run.out, /sleep 600/, 'what was left is named');
  assert.match(run.out, /every test passed, but one left something running/);
  if (process.platform === 'linux') {
    for (const pid of run.pids) assert.not.ok(running(pid), `process ${pid} left running: ${run.out}`);
  }
});

test('a failure whose message quotes totals of another run: the summary counts this run', async () => {
  const run = await runFixture('quotes');
  assert.is(run.last, '1 passed, 1 failed, 0 skipped', run.out);
  assert.is(run.code, 1);
});

test('a pattern that names no test file fails the run and says how to name one (a path is not a pattern)', async () => {
  const run = await runFixture('fails', 'dist/test/support/run-tests.fixture.js');
  assert.is(run.code, 1, run.out);
  assert.match(run.out, /no test file matches "dist\/test\/support\/run-tests\.fixture\.js"/);
  assert.is(run.pids.length, 0, run.out);
});

test.run();
