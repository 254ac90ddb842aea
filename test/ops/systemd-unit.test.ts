import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as assert from 'uvu/assert';
import { systemdAnalyzeBinary } from '../../harness/servers.js';
import { suiteWith } from '../support/suites.js';

/**
 * ops/systemd/plant-store.service checked by systemd's own tool, offline (no systemd need run): `verify` parses every
 * directive and checks that ExecStart's binary exists, so the copy checked names the Node.js running this test (a host
 * has it at /usr/bin/node, a test machine maybe elsewhere); `security` scores its hardening.
 */
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const unit = readFileSync(join(root, 'ops', 'systemd', 'plant-store.service'), 'utf8');
const analyze = systemdAnalyzeBinary();
const { test, subject, run } = suiteWith(
  'ops/systemd unit checked by systemd-analyze',
  'skip' in analyze ? analyze : async () => analyze,
);

/** `systemd-analyze <args> <the unit text, as plant-store.service>`: its status and everything it printed. */
const analyzeUnit = (bin: string, args: string[], text: string) => {
  const dir = mkdtempSync(join(tmpdir(), 'systemd-'));
  try {
    const file = join(dir, 'plant-store.service');
    writeFileSync(file, text.replace('ExecStart=/usr/bin/node ', `ExecStart=${process.execPath} `));
    const result = spawnSync(bin, [...args, file], { encoding: 'utf8' });
    return { status: result.status, output: `${result.stdout}${result.stderr}`.trim() };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
};

test('the unit passes `systemd-analyze verify` without a word', (ctx) => {
  assert.equal(analyzeUnit(subject(ctx).bin, ['verify'], unit), { status: 0, output: '' });
});

test('a directive systemd cannot parse makes verify speak (the check can fail)', (ctx) => {
  const { output } = analyzeUnit(
    subject(ctx).bin,
    ['verify'],
    unit.replace('ProtectSystem=strict', 'ProtectSystem=sternly'),
  );
  assert.match(output, /ProtectSystem|protect system/i);
});

test('its exposure by `systemd-analyze security` is at most 2.0 of 10', (ctx) => {
  // --threshold is in tenths: exit non-zero above 20 (2.0).
  const { status, output } = analyzeUnit(subject(ctx).bin, ['security', '--offline=true', '--threshold=20'], unit);
  assert.is(status, 0, output);
  assert.match(output, /Overall exposure level for plant-store\.service: \d\.\d/);
});

run();
