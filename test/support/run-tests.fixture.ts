/**
 * Suites for `run-tests.test.ts` only (not matched by `npm test`'s pattern): tests that leave processes running, as a
 * test that fails between starting a service and stopping it does. `RUN_TESTS_FIXTURE` picks the case:
 * - `fails`: one test passes; the next starts a service (`runNode`) and a process of its own (a plain `spawn`, which
 *   no helper knows of), then fails an assertion;
 * - `leaves`: one test passes and leaves the same two running, and the test process ignores SIGTERM;
 * - `quotes`: one test passes; the next fails with a message that quotes another run's totals (as a test of the runner
 *   itself does), lines of the shape uvu's own totals have.
 * Each started process is announced on stdout as `fixture started <pid>`.
 */
import { spawn } from 'node:child_process';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { runNode } from './process.js';

const mode = process.env['RUN_TESTS_FIXTURE'];
const test = suite(`run-tests fixture (${mode ?? 'no case'})`);

const startBoth = async () => {
  const svc = runNode('bootstrap/main.js', {
    PORT: '0',
    HOST: '127.0.0.1',
    AUTH_TOKENS: '[{"token":"t","owner":"o","subject":"s","scopes":[]}]',
  });
  await svc.waitFor(/"msg":"listening"/);
  const own = spawn('sleep', ['600'], { stdio: ['ignore', 'pipe', 'pipe'] });
  await new Promise((resolve, reject) => own.once('spawn', resolve).once('error', reject));
  process.stdout.write(`\nfixture started ${svc.child.pid}\nfixture started ${own.pid}\n`);
};

test('passes', () => {
  assert.ok(true);
});

if (mode === 'fails') {
  test('starts a service and a process, then fails', async () => {
    await startBoth();
    assert.is(1, 2, 'the failure this fixture is about');
  });
}

if (mode === 'leaves') {
  test('starts a service and a process, and passes', async () => {
    await startBoth();
    process.removeAllListeners('SIGTERM');
    process.on('SIGTERM', () => undefined);
  });
}

if (mode === 'quotes') {
  test('fails quoting totals', () => {
    assert.is(1, 2, '\n  Total:     7\n  Passed:    7\n  Skipped:   0\n');
  });
}

test.run();
