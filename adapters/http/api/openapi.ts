import { INT64_MAX, INT64_MIN } from '../../../domain/int64.js';
import { PLANT_FIELDS, PLANT_FIELD_NAMES, PlantId, type PlantField } from '../../../domain/plant.js';
import { TOKEN_MAX } from '../../../domain/principal.js';
import { PAGE_DEFAULT, PAGE_MAX } from '../../../application/use-cases/list-plants.js';
import { encodeCursor } from './codecs.js';
import { plantFieldsJoined, RETRY_AFTER_SECONDS, ROUTE_NOT_FOUND } from './failures.js';
import { JSON_LIMITS } from './json.js';
import { common, CORS_IN_WORDS, error, otherFailures, ref, withOperationalPaths } from './openapi-operations.js';

/** The OpenAPI 3.1.0 document from the constants the code enforces; int64 bounds are bigints (lossless-json). */

// Not blank, no C0 control character, no DEL (JSON Schema patterns are ECMA-262 with the u flag).
const TEXT_PATTERN = '^[^\\u0000-\\u001F\\u007F]*[^\\s\\u0000-\\u001F\\u007F][^\\u0000-\\u001F\\u007F]*$';

/** A header of decimal digits. */
const DIGITS = { type: 'string', pattern: '^[0-9]+$' };

/** The caller's own owner's figures against its quota; never another owner's. */
const quotaHeaders = { 'Quota-Limit': ref('headers/Quota-Limit'), 'Quota-Used': ref('headers/Quota-Used') };
const authFailures = { '401': ref('responses/Unauthorized'), '403': ref('responses/Forbidden') };
const rateLimited = { '429': ref('responses/TooManyRequests') };
const unavailable = { '503': ref('responses/Unavailable') };

/** JavaScript's advice in short (in full in docs/API.md); in a schema it was copied into every generated file. */
const BIG_IDS_IN_WORDS = [
  '**Ids beyond 2^53 from JavaScript.** JSON.stringify holds numbers as IEEE doubles and rounds a larger id without a',
  'word (9007199254740993 is sent as 9007199254740992, another plant): send such ids as exact JSON digits, with',
  "`JSON.rawJSON` (Node.js 22+, current browsers) or lossless-json's `stringify` (recipes: docs/API.md), or use the",
  "TypeScript client package of the service's repository (client/), which takes ids as bigints. In",
  'DELETE /plants/{id} the id is a path string, exact at any size; the service never answers an id. Python, Go and',
  'Java integers need nothing.',
].join(' ');

/** Where a token comes from: the first thing a new user of the docs page needs. */
const TOKENS_IN_WORDS = [
  '**Tokens.** Every /plants call needs `Authorization: Bearer <token>` (the Authorize button of the docs page). Where',
  'the token comes from depends on how the operator runs the service (AUTH): by default (`npm start` with no',
  "configuration) a token for the run is printed once in the service's log; with AUTH=static the operator gives you",
  'one of AUTH_TOKENS; with AUTH=redis the operator issues one with `npm run token -- issue` against the same Redis the',
  'service uses; with AUTH=jwt your identity provider issues a signed JWT with the plants:read and plants:write scopes.',
  "A token the service does not know answers 401 `invalid_token`; the server's log line for that request says why.",
].join(' ');

/** The plant every example uses (each field's example), so that Try it out creates, lists and deletes one plant. */
const EXAMPLE_FIELDS = Object.fromEntries(PLANT_FIELD_NAMES.map((k) => [k, PLANT_FIELDS[k].example]));
const EXAMPLE_PLANT = { id: 1, ...EXAMPLE_FIELDS };
const NAME = PLANT_FIELDS.name;
/** Each field's schema, named `Plant` and the field's name (PlantName, ...). */
const schemaName = (k: PlantField): string => `Plant${k[0]?.toUpperCase() ?? ''}${k.slice(1)}`;
const fieldRefs = Object.fromEntries(
  PLANT_FIELD_NAMES.map((k) => [k, { $ref: `#/components/schemas/${schemaName(k)}` }]),
);
const requiredFields = PLANT_FIELD_NAMES.filter((k) => PLANT_FIELDS[k].required);
const fieldSchemas = Object.fromEntries(
  PLANT_FIELD_NAMES.map((k) => {
    const { max, required, example } = PLANT_FIELDS[k];
    const absent = required ? '' : ' Omitted when absent (null is refused).';
    return [
      schemaName(k),
      {
        type: 'string',
        minLength: 1,
        maxLength: max,
        pattern: TEXT_PATTERN,
        examples: [example],
        description: `1 to ${max} Unicode code points, at least one not whitespace, no control characters (U+0000-U+001F, U+007F), no lone surrogates.${absent}`,
      },
    ];
  }),
);

const plantsDocument = ({ bodyLimit }: { readonly bodyLimit: number }) => ({
  openapi: '3.1.0',
  info: {
    title: 'Plant Store',
    version: '1.0.0',
    description:
      [
        'A multi-tenant store of plants. Every plant belongs to the owner of the principal that created it; a principal',
        "sees and deletes only its own owner's plants, and another owner's plant is indistinguishable from a missing one.",
        'Every failure answers the Error body, with `error` equal to the HTTP status. An unknown path answers 404 and a',
        'known path with a method it does not have answers 405 with an `Allow` header, both with the Error body.',
        'Authentication happens before a request body is read or validated.',
        'Failures found before routing answer the Error body too and close the connection: malformed HTTP 400,',
        'request timeouts 408, headers too large 431, an Expect other than 100-continue 417, CONNECT 501, and an HTTP',
        'version other than 1.0 and 1.1 505. Every answer, failures included, carries X-Request-Id, `Cache-Control:',
        "no-store` (the docs page's own files excepted) and `X-Content-Type-Options: nosniff`.",
      ].join(' ') +
      '\n\n' +
      TOKENS_IN_WORDS +
      '\n\n' +
      BIG_IDS_IN_WORDS +
      '\n\n' +
      CORS_IN_WORDS,
  },
  servers: [{ url: '/' }],
  security: [{ bearer: ['plants:read', 'plants:write'] }],
  paths: {
    '/plants': {
      get: {
        operationId: 'listPlants',
        summary: "List the caller's owner's plants, ascending by id",
        description:
          'One page of plants, ascending by id. Follow the `Link: rel="next"` header until there is none to read every plant exactly once.',
        security: [{ bearer: ['plants:read'] }],
        parameters: [
          {
            name: 'limit',
            in: 'query',
            required: false,
            description: `Page size, at most once. Values above ${PAGE_MAX} are served as ${PAGE_MAX}; absent: ${PAGE_DEFAULT}. 0, negatives, fractions, non-numbers and an empty value answer 400.`,
            schema: { type: 'integer', format: 'int32', minimum: 1, maximum: 2147483647, default: PAGE_DEFAULT },
            example: 10,
          },
          {
            name: 'cursor',
            in: 'query',
            required: false,
            description:
              'Opaque; only a value taken from a `Link: rel="next"` header of this service. Anything else, an empty value included, answers 400. Absent: the first page. The example is the cursor after the least int64, -9223372036854775808: it lists from the lowest id, as the first page does (only a plant with that very id would be left out).',
            schema: { type: 'string', minLength: 1, pattern: '^[A-Za-z0-9_-]+$' },
            // Swagger UI's Try it out (/docs) sends the example as given: this one lists from the lowest id.
            example: encodeCursor(INT64_MIN as PlantId),
          },
        ],
        responses: {
          '200': {
            description: `One page of plants, ascending by id (exact over the whole int64 range). When more follow, a \`Link\` header names the next page; following next links until none is returned yields every plant exactly once.`,
            headers: {
              ...common,
              Link: {
                description:
                  'RFC 8288 link to the next page, present only when more plants follow: `</plants?limit=N&cursor=C>; rel="next"`.',
                schema: { type: 'string' },
              },
            },
            content: {
              'application/json': {
                schema: { type: 'array', maxItems: PAGE_MAX, items: ref('schemas/Plant') },
                example: [EXAMPLE_FIELDS, { name: 'Fern' }],
              },
            },
          },
          '400': error(
            400,
            '`limit` or `cursor` is not valid, or given more than once (every parameter of the query is read, however many there are); `message` names the parameter and the rule. (Malformed HTTP is a 400 too, described under `default`.)',
            'cursor: must be a cursor taken from a next link',
          ),
          ...authFailures,
          ...rateLimited,
          ...unavailable,
          ...otherFailures,
        },
      },
      post: {
        operationId: 'createPlant',
        summary: "Create a plant for the caller's owner",
        description: `Ids are unique per owner. Creating a plant whose id the owner already has answers 200 with the stored plant when ${plantFieldsJoined('and')} are the same (a retried create is safe), and 409 when they differ (the stored plant is unchanged). A 200 is sent only after the plant is durably stored.`,
        security: [{ bearer: ['plants:write'] }],
        requestBody: {
          required: true,
          description: `At most ${bodyLimit} bytes of UTF-8 JSON, objects and arrays nested at most ${JSON_LIMITS.maxDepth} deep, at most ${JSON_LIMITS.maxValues} object members and array elements in all, no member name repeated. Members other than id, ${plantFieldsJoined('and')} are ignored: not stored, not echoed.`,
          content: {
            'application/json': { schema: ref('schemas/NewPlant'), example: EXAMPLE_PLANT },
          },
        },
        responses: {
          '200': {
            description:
              "The stored plant. With a quota (MAX_PLANTS_PER_OWNER, on by default), Quota-Limit and Quota-Used give the owner's own figures (on MongoDB, once the serving process has counted the owner: nearly always, see docs/storage.md).",
            headers: { ...common, ...quotaHeaders },
            content: { 'application/json': { schema: ref('schemas/Plant') } },
          },
          '400': error(
            400,
            `The body is not UTF-8 JSON, repeats a member name, nests deeper than ${JSON_LIMITS.maxDepth}, holds more than ${JSON_LIMITS.maxValues} members and elements, is not an object, or breaks a field rule; \`message\` names the field and the rule, e.g. "name: must be 1 to ${NAME.max} characters". A member sent as null (what many serializers write for an unset optional field) is refused: leave an optional field (${PLANT_FIELD_NAMES.filter((k) => !PLANT_FIELDS[k].required).join(', ')}) out instead. (Malformed HTTP is a 400 too, described under \`default\`.)`,
            `name: must be 1 to ${NAME.max} characters`,
          ),
          '401': ref('responses/Unauthorized'),
          '403': ref('responses/ForbiddenOrQuotaExceeded'),
          ...rateLimited,
          '409': error(
            409,
            `The owner already has a plant with this id and a different ${plantFieldsJoined('or')}; nothing was changed.`,
            `id: a plant with this id and a different ${plantFieldsJoined('or')} already exists`,
          ),
          '413': error(
            413,
            `The body is larger than ${bodyLimit} bytes; it is not read, and the connection is closed.`,
            `body: must be at most ${bodyLimit} bytes`,
          ),
          '415': error(
            415,
            'Content-Type is not application/json (parameters such as charset=utf-8 are allowed; another charset is not), or the body has a Content-Encoding other than identity (send it uncompressed).',
            'content-type: must be application/json',
          ),
          ...unavailable,
          '507': error(
            507,
            'The store is full for every owner (in-memory storage: MEMORY_MAX_PLANTS, by default derived from the heap the process may use); nothing was changed. Retrying helps only once plants are deleted.',
            'storage: the store is full; no plant can be created until plants are deleted',
          ),
          ...otherFailures,
        },
      },
    },
    '/plants/{id}': {
      delete: {
        operationId: 'deletePlant',
        summary: "Delete one of the caller's owner's plants",
        description:
          "Deletes the plant with this id of the caller's owner; another owner's plant answers 404 like a missing one.",
        security: [{ bearer: ['plants:write'] }],
        parameters: [
          {
            name: 'id',
            in: 'path',
            required: true,
            description: `A decimal int64: optional leading "-", 1 to 19 digits, from ${INT64_MIN} to ${INT64_MAX}. Anything else ("abc", "1.5", "+1", "0x10", out of range) answers 400.`,
            schema: { type: 'string', pattern: '^-?[0-9]{1,19}$' },
            example: String(EXAMPLE_PLANT.id),
          },
        ],
        responses: {
          '204': { description: 'Deleted; no body.', headers: common },
          '400': error(
            400,
            'The id is not a decimal int64. (Malformed HTTP is a 400 too, described under `default`.)',
            `id: ${PlantId.rule}`,
          ),
          ...authFailures,
          ...rateLimited,
          '404': error(
            404,
            "The caller's owner has no plant with this id (never existed, already deleted, or another owner's).",
            'id: no plant with this id',
          ),
          ...unavailable,
          ...otherFailures,
        },
      },
    },
  },
  components: {
    securitySchemes: {
      bearer: {
        type: 'http',
        scheme: 'bearer',
        description: `Authorization: Bearer <token>; the scheme name is case-insensitive and followed by one or more spaces, the token is an RFC 6750 b64token of at most ${TOKEN_MAX} characters. Scopes: plants:read (list), plants:write (create, delete). Where a token comes from: see **Tokens** in the description above (by default, the one the service prints at start).`,
      },
    },
    schemas: {
      NewPlant: {
        type: 'object',
        required: ['id', ...requiredFields],
        examples: [EXAMPLE_PLANT],
        properties: {
          id: {
            type: 'integer',
            format: 'int64',
            minimum: INT64_MIN,
            maximum: INT64_MAX,
            description:
              'Unique per owner. Kept exact over the whole int64 range (also beyond 2^53): send it as exact JSON digits. A number with a zero fraction (7.0, 7e0) is the integer 7; strings, fractions, booleans and null are refused.',
            examples: [EXAMPLE_PLANT.id],
          },
          ...fieldRefs,
        },
      },
      Plant: {
        type: 'object',
        required: requiredFields,
        additionalProperties: false,
        properties: fieldRefs,
      },
      ...fieldSchemas,
      Error: {
        type: 'object',
        required: ['error', 'message'],
        additionalProperties: false,
        properties: {
          error: { type: 'integer', format: 'int32', description: 'The HTTP status code of the response.' },
          message: { type: 'string', description: 'One sentence that tells the client what to fix.' },
        },
      },
      // Every schema typed: a bare `const` became `interface{}` in Go clients (oapi-codegen), which then failed to
      // decode every answer.
      Health: { type: 'object', required: ['status'], properties: { status: { type: 'string', const: 'ok' } } },
      Ready: { type: 'object', required: ['status'], properties: { status: { type: 'string', const: 'ready' } } },
    },
    headers: {
      'X-Request-Id': {
        required: true,
        description:
          "The caller's X-Request-Id when it is 1 to 128 characters of [A-Za-z0-9._:-], otherwise a new random id; also in the server's log line.",
        schema: { type: 'string', pattern: '^[A-Za-z0-9._:-]{1,128}$' },
      },
      'Cache-Control': { required: true, schema: { type: 'string', const: 'no-store' } },
      'X-Content-Type-Options': { required: true, schema: { type: 'string', const: 'nosniff' } },
      'Retry-After': {
        required: true,
        description: 'Seconds to wait before retrying.',
        schema: { type: 'string', pattern: '^[0-9]+$', default: String(RETRY_AFTER_SECONDS) },
      },
      'WWW-Authenticate': { required: true, schema: { type: 'string', pattern: '^Bearer realm="plants"' } },
      'Quota-Limit': {
        description:
          "How many plants the caller's owner may keep (MAX_PLANTS_PER_OWNER). Present on POST /plants answers 200 and 403 (quota) while a quota is configured.",
        schema: DIGITS,
      },
      'Quota-Used': {
        description:
          "How many plants the caller's owner keeps, as counted by the service process that served this request (creates of the same owner running at the same time, or served by another process since it last counted, may not be included yet). Present with Quota-Limit.",
        schema: DIGITS,
      },
    },
    responses: {
      Unauthorized: error(
        401,
        'Missing header, wrong scheme or malformed token: `WWW-Authenticate: Bearer realm="plants"`. Unknown, expired or revoked token, or (AUTH=jwt) a signature or claim that does not check: `WWW-Authenticate: Bearer realm="plants", error="invalid_token"`, with `error_description="The access token expired"` for an expired JWT. The server\'s log line for the request (its X-Request-Id) says which check failed, never the token.',
        'authorization: the bearer token is unknown, expired or revoked',
        { 'WWW-Authenticate': ref('headers/WWW-Authenticate') },
      ),
      Forbidden: error(
        403,
        'The token lacks the scope: `WWW-Authenticate: Bearer realm="plants", error="insufficient_scope", scope="plants:write"` (or plants:read).',
        'authorization: the token lacks the scope plants:read',
        { 'WWW-Authenticate': ref('headers/WWW-Authenticate') },
      ),
      ForbiddenOrQuotaExceeded: error(
        403,
        'Either the token lacks the scope plants:write: `WWW-Authenticate: Bearer realm="plants", error="insufficient_scope", scope="plants:write"`; or the caller\'s owner already keeps as many plants as its quota allows (MAX_PLANTS_PER_OWNER): no WWW-Authenticate, Quota-Limit and Quota-Used give the figures, `message` starts with "quota:", and nothing was stored. A retried create of a plant already stored still answers 200, and deleting a plant frees room at once, through any service process.',
        'authorization: the token lacks the scope plants:write',
        {
          'WWW-Authenticate': {
            description: 'Present when the scope is missing; absent when the quota is exceeded.',
            schema: { type: 'string', pattern: '^Bearer realm="plants"' },
          },
          ...quotaHeaders,
        },
      ),
      NotFound: error(404, 'Unknown path.', ROUTE_NOT_FOUND),
      MethodNotAllowed: error(405, 'Known path, method it does not have.', 'method not allowed here; use GET, HEAD', {
        Allow: { required: true, schema: { type: 'string' } },
      }),
      TooManyRequests: error(
        429,
        'Only when rate limiting is configured (RATE_LIMIT_MAX): the principal used its allowance for the current fixed window. While limiting is on, every authenticated response also carries the RateLimit-* fields.',
        'too many requests: at most 100 per window; retry in 7 s',
        {
          'Retry-After': ref('headers/Retry-After'),
          ...Object.fromEntries(
            [
              ['Limit', 'Requests allowed per window.'],
              ['Remaining', 'Requests left in this window.'],
              ['Reset', 'Seconds until the window resets.'],
            ].map(([name, description]) => [`RateLimit-${name}`, { required: true, description, schema: DIGITS }]),
          ),
        },
      ),
      Unavailable: error(
        503,
        `A backend the request needs (storage, token store) is unreachable or too slow (bounded, default 2 s). ` +
          `The outcome of a create or delete answered 503 is unknown: it may have been applied, or may still be ` +
          `applied shortly after. Retrying is safe: repeat the same create (200 means the plant is stored, by either ` +
          `attempt; 409 means another plant holds the id) or the same delete (204 or 404 both mean it is gone). A ` +
          `delete answered 503 never removes a plant created after it. A create is also answered 503, before its ` +
          `body is read and with nothing applied, while the service holds as many request bodies as it may ` +
          `(MAX_BODY_BYTES); retry it after Retry-After.`,
        'storage is unavailable, retry later',
        { 'Retry-After': ref('headers/Retry-After') },
      ),
      MalformedRequest: error(
        400,
        'Malformed HTTP, found before the request reached this operation (a bad request line or header, two Content-Length values, bad chunked framing, HTTP/1.1 without exactly one Host); the connection is closed.',
        'request: send exactly one Host header',
      ),
      OtherFailure: error(
        500,
        [
          'Any other failure, with `error` equal to the status. 500: an unexpected fault; the body is exactly',
          '{"error":500,"message":"internal error"}. Found before the request reached the operation, each closing the',
          'connection: 400 malformed HTTP (a bad request line or header, two Content-Length values, bad chunked',
          'framing, HTTP/1.1 without exactly one Host); 408 the headers (HEADERS_TIMEOUT_MS) or the whole request',
          '(REQUEST_TIMEOUT_MS) did not arrive in time, and the request is not processed; 417 an Expect header other',
          'than 100-continue; 431 the request line and headers pass MAX_HEADER_SIZE bytes or MAX_HEADER_FIELDS',
          'fields; 501 a method this server does not implement; 505 an HTTP version other than 1.0 and 1.1.',
        ].join(' '),
        'internal error',
      ),
    },
  },
});

export const openApiDocument = (options: { readonly bodyLimit: number }) =>
  withOperationalPaths(plantsDocument(options));
