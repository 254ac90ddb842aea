import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { renderedOncePerTurn } from '../../adapters/http/metrics-listener.js';
import { startService } from '../support/http.js';
import { eventually } from '../support/wait.js';
import { openWire } from './wire.js';

/** /metrics needs no token where it is served on PORT: what a crowd of scrapes costs is bounded (CONTRACT §9). */
const test = suite('edge: scrapes share their rendering');

const counting = () => {
  let renders = 0;
  return {
    renders: () => renders,
    exposition: {
      contentType: 'text/plain; version=0.0.4; charset=utf-8',
      scrape: async () => `renders_total ${++renders}\n`,
    },
  };
};

test('scrapes read in one turn of the event loop share one rendering, encoded once', async () => {
  const source = counting();
  const shared = renderedOncePerTurn(source.exposition);
  const bodies = await Promise.all([shared.scrape(), shared.scrape(), shared.scrape()]);
  assert.is(source.renders(), 1);
  assert.ok(bodies.every((b) => b === bodies[0]) && Buffer.isBuffer(bodies[0]), 'one Buffer for all');
  assert.is(bodies[0]?.toString(), 'renders_total 1\n');
});

test('a scrape of a later turn renders again, so it reflects what was done in between', async () => {
  const source = counting();
  const shared = renderedOncePerTurn(source.exposition);
  await shared.scrape();
  await new Promise((resolve) => setImmediate(resolve));
  assert.is((await shared.scrape()).toString(), 'renders_total 2\n');
});

test('a hundred connections asking for /metrics at once on the API port cost far fewer renderings than scrapes', async () => {
  const source = counting();
  const svc = await startService({ metricsEndpoint: source.exposition });
  const wires = await Promise.all(Array.from({ length: 100 }, () => openWire(svc.port)));
  try {
    await eventually('the server holds every connection', () =>
      wires.every((w) => svc.holds(w.socket.localPort as number)),
    );
    for (const wire of wires) wire.write('GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n');
    const answers = await Promise.all(wires.map((w) => w.response(1)));
    assert.ok(answers.every((a) => a.status === 200 && /^renders_total \d+\n$/.test(a.body)));
    assert.ok(source.renders() < 50, `${source.renders()} renderings for 100 scrapes`);
  } finally {
    for (const w of wires) w.destroy();
    await svc.close();
  }
});

test.run();
