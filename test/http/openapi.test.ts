import { Validator } from '@seriousme/openapi-schema-validator';
import { stringify } from 'lossless-json';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { openApiDocument } from '../../adapters/http/openapi/openapi.js';

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

test('says the body limit it is built with', () => {
  const small = stringify(openApiDocument({ bodyLimit: 1024 })) as string;
  assert.ok(small.includes('At most 1024 bytes'));
});

test.run();
