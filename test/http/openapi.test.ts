import { Validator } from '@seriousme/openapi-schema-validator';
import { stringify } from 'lossless-json';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import * as E from 'fp-ts/lib/Either.js';
import { decodeCursor } from '../../adapters/http/api/codecs.js';
import { openApiDocument } from '../../adapters/http/api/openapi.js';
import { INT64_MIN } from '../../domain/int64.js';

const test = suite('OpenAPI document');
const text = stringify(openApiDocument({ bodyLimit: 16384 })) as string;

test('validates against the OpenAPI 3.1 schema', async () => {
  const validator = new Validator();
  const result = await validator.validate(JSON.parse(text) as Parameters<Validator['validate']>[0]);
  assert.ok(result.valid, JSON.stringify(result.errors, null, 2));
  assert.is(validator.version, '3.1');
});

test('documents every operation with the Error body on every failure status', () => {
  const doc = JSON.parse(text) as {
    paths: Record<
      string,
      Record<
        string,
        { responses: Record<string, { $ref?: string; content?: Record<string, { schema: { $ref?: string } }> }> }
      >
    >;
    components: { responses: Record<string, { content?: Record<string, { schema: { $ref?: string } }> }> };
  };
  const ops = Object.entries(doc.paths).flatMap(([path, methods]) =>
    Object.keys(methods).map((m) => `${m.toUpperCase()} ${path}`),
  );
  assert.equal(
    ops.sort(),
    [
      'DELETE /plants/{id}',
      'GET /docs',
      'GET /healthz',
      'GET /metrics',
      'GET /openapi.json',
      'GET /plants',
      'GET /readyz',
      'POST /plants',
    ].sort(),
    'what clients and probes call: no CORS preflight, no file of the docs page',
  );
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      for (const [status, response] of Object.entries(op.responses)) {
        if (status !== 'default' && Number(status) < 400) continue;
        const resolved = response.$ref ? doc.components.responses[response.$ref.split('/').pop() as string] : response;
        assert.is(
          resolved?.content?.['application/json']?.schema.$ref,
          '#/components/schemas/Error',
          `${method} ${path} ${status}`,
        );
      }
    }
  }
  const plantOps = ['GET /plants', 'POST /plants', 'DELETE /plants/{id}'];
  for (const op of plantOps) {
    const [method, path] = op.split(' ') as [string, string];
    const statuses = Object.keys(doc.paths[path]?.[method.toLowerCase()]?.responses ?? {});
    for (const s of ['400', '401', '403', '429', '503', 'default'])
      assert.ok(statuses.includes(s), `${op} documents ${s}`);
  }
});

/** Every schema in the document, with where it is: those under `schema`, `items`, `properties` and components. */
const schemas = (node: unknown, at: string, found: Array<[string, Record<string, unknown>]> = []) => {
  if (node === null || typeof node !== 'object') return found;
  for (const [key, value] of Object.entries(node)) {
    const here = `${at}/${key}`;
    if (value === null || typeof value !== 'object') continue;
    if (key === 'schema' || key === 'items') found.push([here, value as Record<string, unknown>]);
    if (key === 'properties' || /\/components\/schemas$/.test(here)) {
      for (const [name, s] of Object.entries(value as Record<string, unknown>))
        found.push([`${here}/${name}`, s as Record<string, unknown>]);
    }
    schemas(value, here, found);
  }
  return found;
};

test('every schema has a type or a $ref: a bare const or enum fails generated Go clients (oapi-codegen)', () => {
  const doc = JSON.parse(text) as object;
  const found = schemas(doc, '#');
  assert.ok(found.length > 30, `${found.length} schemas`);
  for (const [at, schema] of found) assert.ok('type' in schema || '$ref' in schema, `${at} is typed`);
});

test('every failure answer shows a real example: the Error body with its own status', () => {
  const doc = JSON.parse(text) as {
    paths: Record<string, Record<string, { responses: Record<string, { $ref?: string }> }>>;
    components: { responses: Record<string, { content?: Record<string, { example?: { error: number } }> }> };
  };
  for (const [name, response] of Object.entries(doc.components.responses)) {
    const example = response.content?.['application/json']?.example;
    assert.ok(example !== undefined && example.error >= 400, `${name} has an example`);
  }
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      for (const [status, response] of Object.entries(op.responses)) {
        if (response.$ref !== undefined || status === 'default' || Number(status) < 400) continue;
        const example = (response as { content?: Record<string, { example?: { error: number } }> }).content?.[
          'application/json'
        ]?.example;
        assert.is(example?.error, Number(status), `${method} ${path} ${status}`);
      }
    }
  }
});

test("the cursor's example is the cursor after the least int64: Try it out lists from the lowest id", () => {
  const doc = JSON.parse(text) as {
    paths: { '/plants': { get: { parameters: Array<{ name: string; example?: unknown }> } } };
  };
  const cursor = doc.paths['/plants'].get.parameters.find((p) => p.name === 'cursor');
  assert.ok(cursor !== undefined && typeof cursor.example === 'string');
  assert.equal(decodeCursor(cursor.example), E.right(INT64_MIN));
});

test('language-specific advice stays out of schemas (generators copy schema descriptions into every file)', () => {
  for (const [at, schema] of schemas(JSON.parse(text) as object, '#')) {
    assert.not.match(JSON.stringify(schema['description'] ?? ''), /rawJSON|lossless-json|JSON\.stringify/, at);
  }
});

test('says the body limit it is built with', () => {
  const small = stringify(openApiDocument({ bodyLimit: 1024 })) as string;
  assert.ok(small.includes('At most 1024 bytes'));
});

test.run();
