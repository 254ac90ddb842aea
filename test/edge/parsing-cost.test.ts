import { suite } from 'uvu';
import { bearerToken } from '../../adapters/http/api/pipeline.js';
import { isJsonContentType } from '../../adapters/http/api/json.js';
import { decodeCursor, decodePathId } from '../../adapters/http/api/codecs.js';
import { int64FromJsonNumber } from '../../domain/int64.js';
import { PlantText } from '../../domain/plant.js';
import { serviceSuite } from '../support/http.js';
import { assertLinear, perCallMs, perCallMsAsync, sized } from './cost.js';

/**
 * CPU per request is linear in its size: every input a client controls is tried at 1 KiB and at 16 KiB in shapes
 * that make a backtracking regex or a rescanning loop go quadratic (long runs of one character before the one that
 * fails a match, escapes, many members), and the cost may grow about 16x, never about 256x.
 */

const SMALL = 1024;
const LARGE = 16 * 1024;
const RATIO = LARGE / SMALL;

/** Shapes of a whole create body, each made `n` units long (the body at most 16384 bytes, the default limit). */
const bodies: Array<[string, (n: number) => string]> = [
  ['an id with a long run of zeros inside (/0+$/ backtracks)', (n) => `{"id": 1${'0'.repeat(n)}1, "name": "x"}`],
  ['an id with a long zero fraction', (n) => `{"id": 1.${'0'.repeat(n)}1, "name": "x"}`],
  ['an id with zeros before an exponent', (n) => `{"id": 1${'0'.repeat(n)}1e-5, "name": "x"}`],
  ['an id with a long exponent', (n) => `{"id": 1e-${'0'.repeat(n)}1, "name": "x"}`],
  ['an id of leading zeros in a fraction', (n) => `{"id": 0.${'0'.repeat(n)}, "name": "x"}`],
  ['a name of whitespace', (n) => `{"id": 1, "name": "${' '.repeat(n)}"}`],
  ['a name of escapes', (n) => `{"id": 1, "name": "${'\\u00e9'.repeat(n)}"}`],
  ['a name ending in a control character', (n) => `{"id": 1, "name": "${'a'.repeat(n)}\\u0001"}`],
  ['a tag of surrogate pairs and a lone one', (n) => `{"id": 1, "name": "x", "tag": "${'🌵'.repeat(n)}\\ud800"}`],
  ['a long member name', (n) => `{"${'k'.repeat(n)}": 1, "id": 1, "name": "x"}`],
  [
    'many ignored members',
    (n) => `{"id": 1, "name": "x", ${Array.from({ length: n }, (_, i) => `"m${i}":0`).join(',')}}`,
  ],
  ['a long ignored array', (n) => `{"id": 1, "name": "x", "a": [${'0,'.repeat(n)}0]}`],
  [
    'repeated members with equal values',
    (n) => `{"id": 1, "name": "x", "a": "${'z'.repeat(n)}", "a": "${'z'.repeat(n)}"}`,
  ],
  ['an unterminated string of backslashes', (n) => `{"id": 1, "name": "${'\\\\'.repeat(n)}`],
  ['nested arrays, unbalanced', (n) => `{"id": 1, "name": "x", "a": ${'[0,'.repeat(n)}`],
];

const { test, run } = serviceSuite('edge: CPU per create body is linear in its size');

for (const [shape, make] of bodies) {
  test(`POST /plants with ${shape}: 16x the bytes cost at most linear time`, async ({ svc }) => {
    const cost = (bytes: number) => {
      const body = sized(bytes, make);
      return perCallMsAsync(() => svc.call('POST', '/plants', { token: svc.token.alice, body }));
    };
    const small = await cost(SMALL);
    const large = await cost(LARGE);
    assertLinear(shape, small, large, RATIO, 2);
  });
}

run();

/** The functions that read client text directly, each with the shapes that would make it go quadratic. */
const unit = suite('edge: each reader of client text is linear in its input');

const readers: Array<[string, (n: number) => string, (s: string) => unknown]> = [
  ['int64FromJsonNumber, zeros inside', (n) => `1${'0'.repeat(n)}1`, int64FromJsonNumber],
  ['int64FromJsonNumber, zero fraction', (n) => `0.${'0'.repeat(n)}1`, int64FromJsonNumber],
  ['int64FromJsonNumber, exponent digits', (n) => `1${'0'.repeat(n)}e-${'9'.repeat(n)}`, int64FromJsonNumber],
  ['int64FromJsonNumber, not a number at the end', (n) => `-1${'0'.repeat(n)}x`, int64FromJsonNumber],
  ['PlantText.name, whitespace', (n) => ' '.repeat(n), (s) => PlantText.name('name', s)],
  ['PlantText.name, control at the end', (n) => `${'a'.repeat(n)}\u0001`, (s) => PlantText.name('name', s)],
  ['PlantText.tag, surrogate pairs', (n) => '🌵'.repeat(n), (s) => PlantText.tag('tag', s)],
  ['bearerToken, spaces then a token', (n) => `Bearer ${' '.repeat(n)}abc`, bearerToken],
  ['bearerToken, a long token', (n) => `Bearer ${'a'.repeat(n)}=`, bearerToken],
  ['bearerToken, equals signs then a letter', (n) => `Bearer a${'='.repeat(n)}a`, bearerToken],
  ['isJsonContentType, many parameters', (n) => `application/json${'; a=b'.repeat(n)}`, isJsonContentType],
  ['isJsonContentType, long whitespace', (n) => `application/json;${' '.repeat(n)}charset=utf-8`, isJsonContentType],
  ['isJsonContentType, semicolons', (n) => `application/json${';'.repeat(n)}`, isJsonContentType],
  ['decodeCursor, long text', (n) => 'A'.repeat(n), decodeCursor],
  ['decodePathId, long digits', (n) => '9'.repeat(n), decodePathId],
];

for (const [label, make, read] of readers) {
  unit(`${label}: 16x the input costs at most linear time`, () => {
    const small = make(SMALL);
    const large = make(LARGE);
    assertLinear(
      label,
      perCallMs(() => read(small)),
      perCallMs(() => read(large)),
      RATIO,
    );
  });
}

unit.run();
