import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as assert from 'uvu/assert';
import { promtoolBinary } from '../../harness/servers.js';
import { suiteWith } from '../support/suites.js';

/** ops/prometheus checked by Prometheus's own tool: the rules load, and each alert's unit test passes. */
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const rulesDir = join(root, 'ops', 'prometheus');
const promtool = promtoolBinary();
const { test, subject, run } = suiteWith(
  'ops/prometheus rules checked by promtool',
  'skip' in promtool ? promtool : async () => promtool,
);

const promtoolIn = (bin: string, cwd: string, args: string[]) => {
  const result = spawnSync(bin, args, { cwd, encoding: 'utf8' });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
};

test('the rules pass `promtool check rules`', (ctx) => {
  const { status, output } = promtoolIn(subject(ctx).bin, rulesDir, ['check', 'rules', 'rules.yml']);
  assert.is(status, 0, output);
});

test('every alert of the rules has a unit test, and `promtool test rules` passes them all', (ctx) => {
  const alerts = [...readFileSync(join(rulesDir, 'rules.yml'), 'utf8').matchAll(/^\s+- alert: (\w+)$/gm)].map(
    (m) => m[1],
  );
  const tested = new Set(
    [...readFileSync(join(rulesDir, 'rules.test.yml'), 'utf8').matchAll(/alertname: (\w+)$/gm)].map((m) => m[1]),
  );
  assert.ok(alerts.length >= 8, `alerts found: ${alerts.join(', ')}`);
  assert.equal(
    alerts.filter((a) => !tested.has(a)),
    [],
  );
  const { status, output } = promtoolIn(subject(ctx).bin, rulesDir, ['test', 'rules', 'rules.test.yml']);
  assert.is(status, 0, output);
});

test('a unit test that expects an alert which does not fire fails (the unit tests can fail)', (ctx) => {
  const dir = mkdtempSync(join(tmpdir(), 'rules-'));
  try {
    writeFileSync(join(dir, 'rules.yml'), readFileSync(join(rulesDir, 'rules.yml')));
    // The backend comes back before the alert's minute is up: expecting it to fire must fail.
    const wrong = readFileSync(join(rulesDir, 'rules.test.yml'), 'utf8').replace(
      "values: '1 1 0 0 0'",
      "values: '1 1 0 1 1'",
    );
    writeFileSync(join(dir, 'rules.test.yml'), wrong);
    const { status } = promtoolIn(subject(ctx).bin, dir, ['test', 'rules', 'rules.test.yml']);
    assert.is.not(status, 0);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

run();
