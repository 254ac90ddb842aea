import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import * as assert from 'uvu/assert';

/**
 * Checks a real response against the service's own OpenAPI document: the status is documented for the operation,
 * every required header is present and matches its schema, and the body validates against the response schema.
 */
type Doc = {
  paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
  components: { responses: Record<string, unknown>; headers: Record<string, unknown> };
};

interface MediaResponse {
  headers?: Record<string, { $ref?: string; required?: boolean; schema?: object }>;
  content?: Record<string, { schema: object }>;
}

const templateOf = (path: string, doc: Doc): string | undefined => {
  const bare = path.split('?')[0] ?? '';
  if (bare in doc.paths) return bare;
  if (/^\/plants\/[^/]*$/.test(bare)) return '/plants/{id}';
  return undefined;
};

/**
 * The mechanisms the document describes in words, not as operations (adapters/http/api/openapi-operations.ts): the docs
 * page's own files and CORS preflights. Their answers are checked here against what the words say.
 */
const mechanism = (method: string, path: string, status: number, headers: Headers, body: string): boolean => {
  if (method === 'GET' && /^\/docs\/[^/]+$/.test(path.split('?')[0] ?? '') && status === 200) {
    assert.is(headers.get('cache-control'), 'public, max-age=3600', `${path}: a docs file may be cached`);
    assert.ok(body.length > 0, `${path} has a body`);
    return true;
  }
  if (/^\/docs\/(\?|$)/.test(path) && status === 308) {
    assert.is(headers.get('location'), '../docs', '/docs/ redirects to the page');
    return true;
  }
  if (method === 'OPTIONS' && status === 204) {
    assert.ok(headers.get('access-control-allow-origin') !== null, 'a preflight answer allows its origin');
    assert.ok(headers.get('access-control-allow-methods') !== null, 'a preflight answer names the methods');
    assert.is(body, '', 'a preflight answer has no body');
    return true;
  }
  return false;
};

export const conformance = (docText: string) => {
  const doc = JSON.parse(docText) as Doc;
  const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
  ajv.addSchema(doc, 'openapi.json');
  const compiled = new Map<string, ValidateFunction>();
  const validatorAt = (pointer: string): ValidateFunction => {
    let v = compiled.get(pointer);
    if (v === undefined) {
      v = ajv.compile({ $ref: `openapi.json#${pointer}` });
      compiled.set(pointer, v);
    }
    return v;
  };
  const escape = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');
  const resolve = (node: unknown): [unknown, string | undefined] => {
    const ref = (node as { $ref?: string }).$ref;
    if (ref === undefined) return [node, undefined];
    const target = ref
      .slice(2)
      .split('/')
      .reduce<unknown>((n, k) => (n as Record<string, unknown>)[k.replace(/~1/g, '/').replace(/~0/g, '~')], doc);
    return [target, ref.slice(1)];
  };

  return (method: string, path: string, status: number, headers: Headers, body: string): void => {
    assert.ok(headers.get('x-request-id') !== null, `${method} ${path} ${status} carries X-Request-Id`);
    if (mechanism(method, path, status, headers, body)) return;
    const template = templateOf(path, doc);
    const operation = template === undefined ? undefined : doc.paths[template]?.[method.toLowerCase()];
    let pointer: string;
    let response: unknown;
    if (template === undefined && status === 405 && /^\/docs\/[^/]+$/.test(path.split('?')[0] ?? '')) {
      // A docs file with another method (a mechanism, not an operation): 405 like any path's.
      response = doc.components.responses['MethodNotAllowed'];
      pointer = '/components/responses/MethodNotAllowed';
    } else if (template === undefined) {
      assert.is(status, 404, `unknown path ${path} answers 404`);
      response = doc.components.responses['NotFound'];
      pointer = '/components/responses/NotFound';
    } else if (operation === undefined && method !== 'HEAD') {
      assert.is(status, 405, `${method} ${template} is not an operation, so it answers 405`);
      response = doc.components.responses['MethodNotAllowed'];
      pointer = '/components/responses/MethodNotAllowed';
    } else {
      const op = operation ?? doc.paths[template]?.['get'];
      // A status the operation does not list is its `default` answer (a failure with the Error body).
      const listed = op?.responses[String(status)] !== undefined;
      const documented = op?.responses[listed ? String(status) : status >= 400 ? 'default' : ''];
      assert.ok(documented !== undefined, `${method} ${template} documents status ${status}`);
      pointer = `/paths/${escape(template)}/${operation === undefined ? 'get' : method.toLowerCase()}/responses/${listed ? status : 'default'}`;
      response = documented;
    }
    const [resolved, refPointer] = resolve(response);
    if (refPointer !== undefined) pointer = refPointer;
    const media = resolved as MediaResponse;
    for (const [name, header] of Object.entries(media.headers ?? {})) {
      const [h, hPointer] = resolve(header);
      const spec = h as { required?: boolean; schema?: object };
      const value = headers.get(name);
      if (spec.required) assert.ok(value !== null, `${method} ${path} ${status} carries ${name}`);
      if (value !== null && spec.schema !== undefined) {
        const at = hPointer ?? `${pointer}/headers/${escape(name)}`;
        const check = validatorAt(`${at}/schema`);
        assert.ok(check(value), `${name}: ${value} matches its schema ${JSON.stringify(check.errors)}`);
      }
    }
    if (media.content === undefined || method === 'HEAD') {
      assert.is(body, '', `${method} ${path} ${status} has no body`);
      return;
    }
    if (!('application/json' in media.content)) {
      // Operational pages (metrics text, the docs page and its files): the media type is one documented.
      const type = headers.get('content-type')?.split(';')[0] ?? '';
      assert.ok(type in media.content, `${method} ${path} ${status}: content-type ${type} is documented`);
      return;
    }
    assert.is(headers.get('content-type'), 'application/json; charset=utf-8');
    const check = validatorAt(`${pointer}/content/application~1json/schema`);
    const parsed: unknown = JSON.parse(body);
    assert.ok(
      check(parsed),
      `${method} ${path} ${status} body ${body.slice(0, 200)} conforms: ${JSON.stringify(check.errors)}`,
    );
    if (status >= 400) assert.is((parsed as { error: number }).error, status, 'error equals the status');
  };
};
