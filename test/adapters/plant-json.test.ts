import fc from 'fast-check';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { plantJson, plantsJson } from '../../adapters/http/api/codecs.js';
import type { Plant, PlantId, PlantName, PlantText } from '../../domain/plant.js';

const test = suite('plant JSON: the contract shape, byte for byte what JSON.stringify writes');

/** Any UTF-16 code units (quotes, backslashes, controls, lone surrogates), and any code points (pairs). */
const anyText = fc.oneof(
  fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)) }),
  fc.string({ unit: 'binary' }),
);
const anyPlant = fc.record(
  {
    id: fc.bigInt().map((n) => n as PlantId),
    name: anyText.map((s) => s as PlantName),
    tag: anyText.map((s) => s as PlantText<'tag'>),
  },
  { requiredKeys: ['id', 'name'] },
);

test('a plant is JSON.stringify of its name and tag, never its id, whatever its text', () => {
  fc.assert(
    fc.property(anyPlant, (p: Plant) => {
      const expected = JSON.stringify(p.tag === undefined ? { name: p.name } : { name: p.name, tag: p.tag });
      assert.is(plantJson(p), expected);
    }),
    { numRuns: 2000 },
  );
});

test('a page is the JSON array of its plants', () => {
  fc.assert(
    fc.property(fc.array(anyPlant, { maxLength: 30 }), (ps: Plant[]) => {
      assert.is(
        plantsJson(ps),
        JSON.stringify(ps.map((p) => (p.tag === undefined ? { name: p.name } : { name: p.name, tag: p.tag }))),
      );
    }),
  );
});

test.run();
