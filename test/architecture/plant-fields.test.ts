import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as E from 'fp-ts/lib/Either.js';
import { LosslessNumber } from 'lossless-json';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { decodeNewPlant, plantJson } from '../../adapters/http/api/codecs.js';
import { toResponse } from '../../adapters/http/api/failures.js';
import { openApiDocument } from '../../adapters/http/api/openapi.js';
import { WORST_CASE_BYTES_PER_PLANT } from '../../adapters/storage/memory/capacity.js';
import { decodeStored } from '../../adapters/storage/mongodb/plant-document.js';
import { PLANT_FIELDS, PLANT_FIELD_NAMES, plant, samePlant, type Plant, type PlantId } from '../../domain/plant.js';

/**
 * A plant's fields are declared once (PLANT_FIELDS, domain/plant.ts) and every other place derives them. The first
 * test counts the places where production code names the optional field `tag`, the model of a new optional field,
 * against what docs/architecture.md says a new field touches (PLANT_FIELDS, and plant JSON's literal, whose type
 * makes a missing field a compile error); the second checks, field by field, that each place that
 * needs the fields has every one of them (so a place that lists them by hand and forgets one fails here).
 */
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const PRODUCTION = ['domain', 'application', 'adapters', 'bootstrap'];

const sourcesUnder = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    return entry.isDirectory() ? sourcesUnder(path) : entry.name.endsWith('.ts') ? [path] : [];
  });

/** Every line of production code (comments included) that names `tag` as a word of its own (not `_tag`, `tags`). */
const placesNaming = (word: string): string[] =>
  PRODUCTION.flatMap((top) => sourcesUnder(join(root, top))).flatMap((file) =>
    readFileSync(file, 'utf8')
      .split('\n')
      .flatMap((line, i) =>
        new RegExp(`(?<![\\w$])${word}(?![\\w$])`).test(line)
          ? [`${relative(root, file)}:${i + 1}: ${line.trim()}`]
          : [],
      ),
  );

const test = suite('plant fields');

test('a new optional field touches the places docs/architecture.md says: its line of PLANT_FIELDS and its member of plant JSON', () => {
  const places = placesNaming('tag');
  const claim = /It touches (\d+) files? in (\d+) places?/.exec(
    readFileSync(join(root, 'docs', 'architecture.md'), 'utf8'),
  );
  assert.ok(claim !== null, 'docs/architecture.md states how many files and places a new field touches');
  const files = new Set(places.map((place) => place.slice(0, place.indexOf(':'))));
  assert.equal([files.size, places.length], [Number(claim[1]), Number(claim[2])], places.join('\n'));
  assert.match(places[0] ?? '', /^domain\/plant\.ts:\d+: tag: \{ required: false,/);
  assert.match(places[1] ?? '', /^adapters\/http\/api\/codecs\.ts:\d+: const contractShape = .*tag: p\.tag/);
});

const id = 7n as PlantId;
/** A plant with every field, each at its example value. */
const full = plant({
  id,
  ...Object.fromEntries(PLANT_FIELD_NAMES.map((k) => [k, PLANT_FIELDS[k].example])),
});

test('every field of PLANT_FIELDS is in the equality, the codec, plant JSON, the stored document, the 409 and the schemas', () => {
  const document = openApiDocument({ bodyLimit: 1024 }) as unknown as {
    components: { schemas: Record<string, { properties: Record<string, unknown>; required: string[] }> };
  };
  const { NewPlant, Plant: PlantSchema } = document.components.schemas;
  const body = { ...full, id: new LosslessNumber('7') };
  for (const k of PLANT_FIELD_NAMES) {
    const other: Plant = { ...full, [k]: `${PLANT_FIELDS[k].example}!` };
    assert.not.ok(samePlant(full, other), `samePlant compares ${k}`);
    assert.ok(samePlant(full, { ...full }), 'samePlant');
    const decoded = decodeNewPlant(body);
    assert.ok(E.isRight(decoded) && decoded.right[k] === full[k], `the body's codec keeps ${k}`);
    const nulled = decodeNewPlant({ ...body, [k]: null });
    assert.ok(E.isLeft(nulled) && nulled.left.field === k, `the codec names ${k} when it is null`);
    assert.is((JSON.parse(plantJson(full)) as Record<string, unknown>)[k], full[k], `plant JSON shows ${k}`);
    assert.is(decodeStored({ id: 7n, ...stripId(full) })[k], full[k], `the MongoDB document keeps ${k}`);
    assert.ok(toResponse({ _tag: 'PlantConflict' }).message.includes(k), `the 409 message names ${k}`);
    assert.ok(k in NewPlant!.properties && k in PlantSchema!.properties, `the OpenAPI schemas list ${k}`);
    assert.is(PlantSchema!.required.includes(k), PLANT_FIELDS[k].required, `the Plant schema requires ${k} or not`);
    if (!PLANT_FIELDS[k].required) {
      const without = decodeNewPlant({ ...body, [k]: undefined });
      assert.ok(E.isRight(without) && !(k in without.right), `an absent ${k} is left out`);
    }
  }
  const longest = PLANT_FIELD_NAMES.reduce((sum, k) => sum + 4 * PLANT_FIELDS[k].max, 0);
  assert.ok(WORST_CASE_BYTES_PER_PLANT > longest, 'the memory bound counts every field at its longest');
});

function stripId({ id: _id, ...rest }: Plant): Omit<Plant, 'id'> {
  return rest;
}

test.run();
