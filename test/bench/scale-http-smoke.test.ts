import * as assert from 'uvu/assert';
import { runToEnd } from '../support/bench-run.js';
import { ferretDbBinary } from '../../harness/servers.js';
import { suiteWith } from '../support/suites.js';

/**
 * `npm run bench:scale-http -- --smoke` still runs end to end (service processes over HTTP on its own FerretDB/SQLite,
 * every case, tiny): it prints each case's line and the closing table, its proxy counts the bare driver's insertOne
 * as exactly one command, and it leaves no process behind. No figure is held to a speed.
 */
const binary = ferretDbBinary();
const { test, run } = suiteWith('npm run bench:scale-http, smoke', 'skip' in binary ? binary : async () => ({}));

const passThrough = (...names: string[]): Record<string, string> =>
  Object.fromEntries(names.flatMap((n) => (process.env[n] === undefined ? [] : [[n, process.env[n] as string]])));

test('prints a line for each case and the table; the proxy counts one command per bare insert; nothing is left running', async () => {
  const { code, out, err } = await runToEnd(
    'bench/scale-http.js',
    passThrough('HOME', 'FERRETDB_BIN', 'GOPATH', 'GOBIN', 'CI'),
    ['--smoke'],
  );
  assert.is(code, 0, `exit ${String(code)}: ${err}\n${out}`);
  for (const line of [
    /^ {2}uniform, round 1: bare \d+\/s \(1\.00 commands per insert\), HTTP \d+\/s .* [\d.]+ commands, [\d.]+ finds \(\d+ of plants: [^)]*\) and [\d.]+ loads per create/m,
    /^ {2}Zipf, round 1: bare \d+\/s \(1\.00 commands per insert\)/m,
    /^ {2}round-robin, round 1: bare \d+\/s \(1\.00 commands per insert\)/m,
    /^b\. 20 owners first seen empty, grown to 10 plants each through one process .* heap used after a full GC [\d.]+ MiB before, [\d.]+ MiB after/m,
    /^c\. replacing plants at the quota \(200\) across 3 processes, 10 times: .* per replacement [\d.]+ commands/m,
    /^d\. filling one owner from 0 to 200 across 3 processes, .* [\d.]+ inserts \([\d.]+ insert commands\) per stored create/m,
    /^e\. 400 plants seeded: .* a restart ready after \d+ ms; then 4 owners' first creates at once: \d+ of 4 first answers/m,
    /^\| case \| figure \| measured \| target \|$/m,
    /^\| e \| 4 owners at once: /m,
  ])
    assert.match(out, line);
});

run();
