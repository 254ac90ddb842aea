import * as assert from 'uvu/assert';
import { ferretDbBinary } from '../../harness/servers.js';
import { runNode } from '../support/process.js';
import { suiteWith } from '../support/suites.js';

/**
 * `npm run bench:creates` still runs end to end (its own FerretDB, the bare driver and the adapter side by side, both
 * cases) and prints every figure, finite. Tiny parameters, a few seconds; no figure is held to a speed.
 */
const binary = ferretDbBinary();
const { test, run } = suiteWith('npm run bench:creates, tiny', 'skip' in binary ? binary : async () => ({}));

const passThrough = (...names: string[]): Record<string, string> =>
  Object.fromEntries(names.flatMap((n) => (process.env[n] === undefined ? [] : [[n, process.env[n] as string]])));

const number = String.raw`(\d+(?:\.\d+)?)`;

test('prints each round and the medians of both cases, every figure finite', async () => {
  const bench = runNode('bench/creates.js', passThrough('HOME', 'FERRETDB_BIN', 'GOPATH', 'GOBIN', 'CI'), [
    '--seconds',
    '0.3',
    '--rounds',
    '1',
    '--quota',
    '200',
    '--owners',
    '2',
    '--clients',
    '4',
  ]);
  const bound = setTimeout(() => bench.child.kill('SIGKILL'), 60_000);
  const code = await bench.exited;
  clearTimeout(bound);
  const out = bench.stdout();
  assert.is(code, 0, `exit ${String(code)}: ${bench.stderr()}\n${out}`);
  assert.match(out, /^creates per second, 4 concurrent clients, quota 200, 1 rounds of 0\.3 s, FerretDB SQLite/m);
  for (const label of ['owner with no plants', 'owner at 75% of its quota']) {
    const round = new RegExp(
      `^  ${label}, round 1: bare insertOne ${number}/s.*, adapter ${number}/s.*; an owner's first create ${number} ms at most \\(([\\d,]+) plants stored\\)$`,
      'm',
    ).exec(out);
    assert.ok(round !== null, `${label}: the round's line in\n${out}`);
    const median = new RegExp(
      `^  ${label}: median bare insertOne ${number}/s, adapter ${number}/s, adapter/driver ${number}$`,
      'm',
    ).exec(out);
    assert.ok(median !== null, `${label}: the medians' line in\n${out}`);
    const figures = [...(round ?? []).slice(1, 4), ...(median ?? []).slice(1)].map(Number);
    for (const f of figures) assert.ok(Number.isFinite(f), `${label}: ${figures.join(', ')}`);
    assert.ok(Number(median?.[2]) > 0, `${label}: the adapter stored plants (${median?.[0] ?? ''})`);
  }
});

run();
