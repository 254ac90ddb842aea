import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { runToEnd } from '../support/bench-run.js';

/**
 * The benchmark still runs end to end: every step prints its figures, each a finite number (positive where it is a
 * rate, a cost or a size; latencies in whole milliseconds may be 0), every request the load generator sent was
 * answered 2xx and counted by the service under the same route, and the bench leaves no process behind. In smoke
 * mode it asserts no speed.
 */
const test = suite('npm run bench -- --smoke');

/** The numbers a line matching `pattern` carries in its groups, for every such line. */
const figures = (out: string, pattern: string): number[][] =>
  [...out.matchAll(new RegExp(pattern, 'gm'))].map((m) => m.slice(1).map(Number));

const NUMBER = String.raw`(\S+)`;

test('prints every figure, finite and in range; the load generator and the service count the same requests, all 2xx; nothing is left running', async () => {
  // The bench stops what it started before it exits: runToEnd checks its process group is empty.
  const { code, out, err } = await runToEnd('bench/run.js', {}, ['--smoke']);
  assert.is(code, 0, err);

  for (const line of [
    /^machine: \d+ cores/m,
    /^this run takes about \d+ (s|min) \(\d+ s expected\)$/m,
    /^node v\d+\.\d+\.\d+ GET \/plants\?limit=20 \(1 rounds of \d+ requests each, 32 connections, servers in turn: service, floor/m,
    /^node v\d+\.\d+\.\d+ POST \/plants \(1 rounds of \d+ requests each, 32 connections, servers in turn: service, floor/m,
    /^JSON body parse cost per body/m,
    /^AUTH=redis (vs static|: skipped)/m,
  ]) {
    assert.match(out, line);
  }
  assert.not.match(out, /non-2xx\/errors/, 'every benchmarked request succeeded');
  assert.not.match(out, /\bNaN\b|Infinity|\bn\/a\b|undefined/, 'no figure is missing or not a number');

  const ok = (what: string, xs: number[], check: (x: number) => boolean) => {
    assert.ok(xs.length > 0, `${what}: printed`);
    for (const x of xs) assert.ok(Number.isFinite(x) && check(x), `${what}: ${x}`);
  };
  const positive = (x: number) => x > 0;
  const notNegative = (x: number) => x >= 0;

  // Each round: requests/s, p50 <= p99 (whole ms), the server's CPU per request; a reference's line adds its ratio.
  const rounds = figures(
    out,
    String.raw`^ {2}round \d+ {2}(?:service +|static|redis cache|redis no cache) +${NUMBER} req\/s {2}p50 +${NUMBER} ms {2}p99 +${NUMBER} ms {2}cpu +${NUMBER} µs\/req$`,
  );
  const references = figures(
    out,
    String.raw`^ {11}(?:floor|contract floor|peer) +${NUMBER} req\/s {2}p50 +${NUMBER} ms {2}p99 +${NUMBER} ms {2}cpu +${NUMBER} µs\/req {2}cpu (?:floor|contract floor|peer)\/service ${NUMBER}$`,
  );
  const lineUp = /servers in turn: ([^)]*)\)/.exec(out)?.[1] ?? '';
  // Every runtime found runs each route once: the bench's own node at least, the references it found beside it.
  const runtimes = new Set([...out.matchAll(/^node (v\S+) GET /gm)].map((m) => m[1])).size;
  const serviceRounds = figures(out, String.raw`^ {2}round \d+ {2}service +${NUMBER} req`).length;
  const present = lineUp.split(', ').length;
  assert.ok(runtimes >= 1 && present >= 2, `runtimes ${runtimes}, servers ${present}`);
  assert.is(serviceRounds, 2 * runtimes, 'a service line per runtime and method');
  assert.is(references.length, 2 * runtimes * (present - 1), 'a line per reference, runtime and method');
  for (const [rps = NaN, p50 = NaN, p99 = NaN, cpu = NaN, ...ratios] of [...rounds, ...references]) {
    ok('req/s', [rps], positive);
    ok('p50 and p99', [p50, p99], notNegative);
    assert.ok(p50 <= p99, `p50 ${p50} <= p99 ${p99}`);
    ok('cpu per request', [cpu], positive);
    if (ratios.length > 0) ok('ratios', ratios, positive);
  }
  // The contract floor and the peer run, or the bench says why each is left out (its files not beside the project).
  for (const reference of ['contract floor', 'peer']) {
    const said = new RegExp(`^side by side: ${reference}: .+ \\(left out\\)$`, 'm').test(out);
    assert.ok(lineUp.includes(reference) !== said, `${reference}: run (${lineUp}) or said left out`);
  }
  const summaries = figures(
    out,
    String.raw`^summary node v\S+ (?:GET \/plants\?limit=20|POST \/plants): service ${NUMBER} µs\/req; floor\/service ${NUMBER}(?:, contract floor\/service ${NUMBER})?(?:, peer\/service ${NUMBER})?$`,
  );
  assert.is(summaries.length, 2 * runtimes, 'a summary per runtime and route');
  ok(
    'summary',
    summaries.flat().filter((x) => !Number.isNaN(x)),
    positive,
  );
  const lists = figures(out, String.raw`^ {2}list p50 at +(\d+) plants: ${NUMBER} ms \(p99 ${NUMBER} ms\)$`);
  assert.is(lists.length, 2, 'list latency at two sizes');
  for (const [, p50 = NaN, p99 = NaN] of lists) {
    ok('list p50 and p99', [p50, p99], positive);
    assert.ok(p50 <= p99, `list p50 ${p50} <= p99 ${p99}`);
  }
  ok('list p50 ratio', figures(out, String.raw`^ {2}ratio p50 at \d+ \/ at \d+: ${NUMBER}$`).flat(), positive);
  ok(
    'heap bytes per plant',
    figures(out, String.raw`^heap bytes per stored plant beyond its strings, at \d+ plants: ${NUMBER}$`).flat(),
    positive,
  );
  const parseCosts = out
    .split('\n')
    .filter((l) => l.startsWith('  a plant'))
    .flatMap((l) => [...l.matchAll(/(\S+) µs/g)].map((m) => Number(m[1])));
  assert.ok(parseCosts.length >= 4, `a parse cost per parser and body (${parseCosts.length})`);
  ok('parse cost', parseCosts, positive);
  if (/^AUTH=redis vs static/m.test(out)) {
    assert.is(
      rounds.length,
      2 * runtimes + 3,
      'the service per runtime and method, then static, redis cache on and off',
    );
    ok(
      'redis ratios and cpu',
      [
        ...figures(out, String.raw`^ {2}median ratio redis\(cache o(?:n|ff)\)\/static: ${NUMBER}$`).flat(),
        ...figures(
          out,
          String.raw`^ {2}median cpu per request: static ${NUMBER} µs, redis cache on ${NUMBER} µs, cache off ${NUMBER} µs`,
        ).flat(),
      ],
      positive,
    );
  }
  // What the load generator sent, had answered and had answered 2xx is what the service counted for that route,
  // every one a 2xx, and as many as the plan says.
  const planned = Number(/\(1 rounds of (\d+) requests each/.exec(out)?.[1]);
  const counts = [
    ...out.matchAll(
      /^ {2}count {2}(.+?) {2}sent (\d+) {2}answered (\d+) {2}2xx (\d+) {2}counted by the service (\d+) \(([^)]*)\)$/gm,
    ),
  ];
  assert.is(counts.length, rounds.length, 'a count for every load on the service');
  for (const [, what, sent, answered, twoXx, byService, statuses = ''] of counts) {
    assert.is(Number(sent), planned, `${what}: sent as planned`);
    assert.is(Number(answered), Number(sent), `${what}: every request sent was answered`);
    assert.is(Number(twoXx), Number(sent), `${what}: every answer a 2xx`);
    assert.is(Number(byService), Number(sent), `${what}: the service counted as many`);
    assert.ok(
      statuses.split(', ').every((s) => /^2\d\d: \d+$/.test(s)),
      `${what}: the service answered only 2xx (${statuses})`,
    );
  }
});

test.run();
