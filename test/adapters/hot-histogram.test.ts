import { Counter, Registry } from 'prom-client';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { exposition, HotHistogram } from '../../adapters/observability/hot-histogram.js';
import { parseExposition } from '../support/prometheus-text.js';

const test = suite('HotHistogram: per-request observations exposed through prom-client');

const scrape = async (h: HotHistogram) => parseExposition(await exposition(new Registry(), [h])());

test('an observation counts in the first bucket whose bound it does not exceed, cumulatively, with sum and count', async () => {
  const h = new HotHistogram('t_seconds', 'test', [0.1, 1, 10]);
  const child = h.child({ route: '/a' });
  for (const v of [0.05, 0.1, 0.5, 1, 20]) child.observe(v);
  const m = await scrape(h);
  assert.is(m.types.get('t_seconds'), 'histogram');
  assert.is(m.value('t_seconds_bucket', { route: '/a', le: '0.1' }), 2, 'a value equal to a bound is in that bucket');
  assert.is(m.value('t_seconds_bucket', { route: '/a', le: '1' }), 4);
  assert.is(m.value('t_seconds_bucket', { route: '/a', le: '10' }), 4);
  assert.is(m.value('t_seconds_bucket', { route: '/a', le: '+Inf' }), 5);
  assert.is(m.value('t_seconds_count', { route: '/a' }), 5);
  assert.ok(Math.abs((m.value('t_seconds_sum', { route: '/a' }) ?? 0) - 21.65) < 1e-9);
});

test('each label set is a series of its own', async () => {
  const h = new HotHistogram('t_seconds', 'test', [1]);
  const a = h.child({ route: '/a' });
  const b = h.child({ route: '/b' });
  a.observe(0.5);
  b.observe(2);
  b.observe(3);
  const m = await scrape(h);
  assert.is(m.value('t_seconds_count', { route: '/a' }), 1);
  assert.is(m.value('t_seconds_count', { route: '/b' }), 2);
  assert.is(m.value('t_seconds_bucket', { route: '/b', le: '1' }), 0);
});

test("the registry's own metrics are served beside the histograms, each HELP and TYPE once", async () => {
  const registry = new Registry();
  new Counter({ name: 'c_total', help: 'a counter', registers: [registry] }).inc(3);
  const h = new HotHistogram('t_seconds', 'test', [1]);
  h.child({ route: '/a' }).observe(2);
  const text = await exposition(registry, [h])();
  const m = parseExposition(text);
  assert.is(m.value('c_total', {}), 3);
  assert.is(m.value('t_seconds_bucket', { route: '/a', le: '+Inf' }), 1);
  assert.is(text.match(/^# TYPE t_seconds histogram$/gm)?.length, 1);
  assert.is(text.match(/^# HELP c_total a counter$/gm)?.length, 1);
});

test.run();
