import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as assert from 'uvu/assert';
import { amtoolBinary } from '../../harness/servers.js';
import { suiteWith } from '../support/suites.js';

/** ops/alertmanager checked by Alertmanager's own tool, and its inhibition naming only alerts the rules have. */
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const config = join(root, 'ops', 'alertmanager', 'alertmanager.yml');
const amtool = amtoolBinary();
const { test, subject, run } = suiteWith(
  'ops/alertmanager checked by amtool',
  'skip' in amtool ? amtool : async () => amtool,
);

const checkConfig = (bin: string, file: string) => {
  const result = spawnSync(bin, ['check-config', file], { encoding: 'utf8' });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
};

test('the configuration passes `amtool check-config`', (ctx) => {
  const { status, output } = checkConfig(subject(ctx).bin, config);
  assert.is(status, 0, output);
});

test('a configuration routing to a receiver it does not define fails the check (the check can fail)', (ctx) => {
  const dir = mkdtempSync(join(tmpdir(), 'alertmanager-'));
  try {
    const wrong = readFileSync(config, 'utf8').replace('receiver: page', 'receiver: pager');
    writeFileSync(join(dir, 'alertmanager.yml'), wrong);
    assert.is.not(checkConfig(subject(ctx).bin, join(dir, 'alertmanager.yml')).status, 0);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('every alert the inhibition names is an alert of the rules', () => {
  const alerts = new Set(
    [...readFileSync(join(root, 'ops', 'prometheus', 'rules.yml'), 'utf8').matchAll(/^\s+- alert: (\w+)$/gm)].map(
      (m) => m[1],
    ),
  );
  const named = [...readFileSync(config, 'utf8').matchAll(/PlantStore\w+/g)].map((m) => m[0]);
  assert.ok(named.length >= 5);
  assert.equal(
    named.filter((n) => !alerts.has(n)),
    [],
  );
});

run();
