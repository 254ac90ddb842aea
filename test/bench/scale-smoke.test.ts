import * as assert from 'uvu/assert';
import { ferretDbBinary } from '../../harness/servers.js';
import { runNode } from '../support/process.js';
import { suiteWith } from '../support/suites.js';

/**
 * `npm run bench:scale -- --smoke` still runs end to end (its own FerretDB/SQLite, every case, tiny) and prints each
 * case's line. No figure is held to a speed.
 */
const binary = ferretDbBinary();
const { test, run } = suiteWith('npm run bench:scale, smoke', 'skip' in binary ? binary : async () => ({}));

const passThrough = (...names: string[]): Record<string, string> =>
  Object.fromEntries(names.flatMap((n) => (process.env[n] === undefined ? [] : [[n, process.env[n] as string]])));

test('prints a line for each case: many owners, replacing at the quota, filling, a restart', async () => {
  const bench = runNode('bench/scale.js', passThrough('HOME', 'FERRETDB_BIN', 'GOPATH', 'GOBIN', 'CI'), ['--smoke']);
  const bound = setTimeout(() => bench.child.kill('SIGKILL'), 120_000);
  const code = await bench.exited;
  clearTimeout(bound);
  const out = bench.stdout();
  assert.is(code, 0, `exit ${String(code)}: ${bench.stderr()}\n${out}`);
  for (const line of [
    /^ {2}uniform, round 1: bare \d+\/s, adapter \d+\/s/m,
    /^ {2}Zipf, round 1: /m,
    /^ {2}round-robin, round 1: /m,
    /^c\. replacing plants at the quota \(200\) across 3 instances, 30 times: .* per replacement [\d.]+ commands/m,
    /^d\. filling one owner from 0 to 200 across 3 instances, .* [\d.]+ inserts per stored create/m,
    /^e\. a restart over 400 plants, 4 owners' first creates at once: \d+ of 4 first answers 503/m,
  ])
    assert.match(out, line);
});

run();
