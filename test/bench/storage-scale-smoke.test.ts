import * as assert from 'uvu/assert';
import { ferretDbBinary } from '../../harness/servers.js';
import { runNode } from '../support/process.js';
import { suiteWith } from '../support/suites.js';

/**
 * `npm run bench:storage-scale` still runs end to end (its own FerretDB, 1,000 plants with `--smoke`): the commands'
 * costs, the pages, a restart that gets ready, and a dropped slot index rebuilt under creates that are then stored
 * again. A few seconds; no figure is held to a speed.
 */
const binary = ferretDbBinary();
const { test, run } = suiteWith('npm run bench:storage-scale, tiny', 'skip' in binary ? binary : async () => ({}));

const passThrough = (...names: string[]): Record<string, string> =>
  Object.fromEntries(names.flatMap((n) => (process.env[n] === undefined ? [] : [[n, process.env[n] as string]])));

test('prints every step; the restart gets ready and the dropped slot index is rebuilt, creates stored again', async () => {
  const bench = runNode('bench/storage-scale.js', passThrough('HOME', 'FERRETDB_BIN', 'GOPATH', 'GOBIN', 'CI'), [
    '--smoke',
  ]);
  const bound = setTimeout(() => bench.child.kill('SIGKILL'), 60_000);
  const code = await bench.exited;
  clearTimeout(bound);
  const out = bench.stdout();
  assert.is(code, 0, `exit ${String(code)}: ${bench.stderr()}\n${out}`);
  assert.match(out, /^storage at scale: FerretDB SQLite, 1,000 plants \(one owner of 500\)/m);
  assert.match(out, /^ {2}find\(\{slot: null\}\)\.limit\(1000\) \(the mend of plants without a slot\): \d+ ms$/m);
  assert.match(out, /^ {2}limit 1000, middle: \d+ ms \(250 plants\)$/m);
  assert.match(out, /^ {2}ready \(ping answers\) after: \d+ ms$/m);
  const drop =
    /^ {2}first 503 after the drop: (.+); slot index listed again: (.+); first create stored after that: (.+); longest time without a stored create: .+$/m.exec(
      out,
    );
  assert.ok(drop !== null, out);
  assert.not.equal(drop[2], 'never', out);
  assert.not.equal(drop[3], 'never', out);
  assert.match(out, /is in place after/);
});

run();
