import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { runNode } from '../support/process.js';

/** The benchmark still runs end to end and prints every figure; in smoke mode it asserts no times. */
const test = suite('npm run bench -- --smoke');

test('prints throughput, latency, server CPU per request and the ratios per round, list scaling, heap per plant and the AUTH=redis figures', async () => {
  const bench = runNode('bench/run.js', {}, ['--smoke']);
  const code = await bench.exited;
  const out = bench.stdout();
  assert.is(code, 0, bench.stderr());
  for (const figure of [
    /^machine: \d+ cores/m,
    /^this run takes about \d+ (s|min) \(\d+ s expected\)$/m,
    /GET \/plants\?limit=20 \(1 rounds/,
    /POST \/plants \(1 rounds/,
    /round 1 {2}service +\d+ req\/s {2}p50 +\d+ ms {2}p99 +\d+ ms {2}cpu +\d+\.\d µs\/req/,
    /floor +\d+ req\/s .* cpu +\d+\.\d µs\/req +ratio \d+\.\d\d {2}cpu floor\/service \d+\.\d\d/,
    /median ratio service\/floor: \d+\.\d\d/,
    /median cpu per request: service \d+\.\d µs, floor \d+\.\d µs, floor\/service \d+\.\d\d \(median of the rounds' own ratios \d+\.\d\d\)/,
    /list p50 at +1000 plants: \d+\.\d{3} ms/,
    /ratio p50 at 20000 \/ at 1000: [\d.]+/,
    /heap bytes per stored plant beyond its strings, at 20000 plants: \d+/,
    /AUTH=redis (vs static|: skipped)/,
    /^summary: GET ratio \d+\.\d\d, POST ratio \d+\.\d\d$/m,
    /^summary cpu per request: GET \d+\.\d µs vs floor \d+\.\d µs, floor\/service \d+\.\d\d; POST \d+\.\d µs vs floor \d+\.\d µs, floor\/service \d+\.\d\d$/m,
  ]) {
    assert.match(out, figure);
  }
  assert.not.match(out, /non-2xx\/errors/, 'every benchmarked request succeeded');
});

test.run();
