// Generated from GET /openapi.json by `npm run client:schema` (test/support/client-schema.ts): do not edit.
export interface paths {
  '/plants': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /**
     * List the caller's owner's plants, ascending by id
     * @description One page of plants, ascending by id. Follow the `Link: rel="next"` header until there is none to read every plant exactly once.
     */
    get: operations['listPlants'];
    put?: never;
    /**
     * Create a plant for the caller's owner
     * @description Ids are unique per owner. Creating a plant whose id the owner already has answers 200 with the stored plant when name and tag are the same (a retried create is safe), and 409 when they differ (the stored plant is unchanged). A 200 is sent only after the plant is durably stored.
     */
    post: operations['createPlant'];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/plants/{id}': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    get?: never;
    put?: never;
    post?: never;
    /**
     * Delete one of the caller's owner's plants
     * @description Deletes the plant with this id of the caller's owner; another owner's plant answers 404 like a missing one.
     */
    delete: operations['deletePlant'];
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/healthz': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /**
     * Liveness: 200 while the process serves requests
     * @description Answers without calling any backend: a failure here means the process itself is not serving.
     */
    get: operations['health'];
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/readyz': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /**
     * Readiness: 200 when every configured backend answers
     * @description Asks every configured backend (storage, token store) and answers within a bound even when one hangs.
     */
    get: operations['ready'];
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/openapi.json': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /**
     * This document
     * @description The OpenAPI 3.1.0 document of the service, built from the same constants the code enforces.
     */
    get: operations['openapi'];
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/metrics': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /**
     * Prometheus metrics of this process
     * @description Prometheus text format: requests by method, route template and status, their durations, requests in flight, each backend's availability and call durations, rate-limit refusals, the service's version (plantstore_build_info), and the process and event-loop metrics. It passes `promtool check metrics`. No token: served on this port unless METRICS_PORT names a separate listener for it, in which case this path answers 404 here, for every method.
     */
    get: operations['metrics'];
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/docs': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /**
     * This reference as a web page
     * @description Renders /openapi.json with Swagger UI, from files served by the service itself under /docs/ (works offline), under a Content-Security-Policy that allows this origin only. The page loads those files itself; they are not operations of this document. /docs/ (with the slash) redirects here (308, `Location: ../docs`).
     */
    get: operations['docs'];
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
}
export type webhooks = Record<string, never>;
export interface components {
  schemas: {
    /**
     * @example {
     *       "id": 1,
     *       "name": "Monstera",
     *       "tag": "indoor"
     *     }
     */
    NewPlant: {
      /**
       * Format: int64
       * @description Unique per owner. Kept exact over the whole int64 range (also beyond 2^53): send it as exact JSON digits. A number with a zero fraction (7.0, 7e0) is the integer 7; strings, fractions, booleans and null are refused.
       * @example 1
       */
      id: bigint;
      name: components['schemas']['PlantName'];
      tag?: components['schemas']['PlantTag'];
    };
    Plant: {
      name: components['schemas']['PlantName'];
      tag?: components['schemas']['PlantTag'];
    };
    /**
     * @description 1 to 200 Unicode code points, at least one not whitespace, no control characters (U+0000-U+001F, U+007F), no lone surrogates.
     * @example Monstera
     */
    PlantName: string;
    /**
     * @description 1 to 100 Unicode code points, at least one not whitespace, no control characters (U+0000-U+001F, U+007F), no lone surrogates. Omitted when absent (null is refused).
     * @example indoor
     */
    PlantTag: string;
    Error: {
      /**
       * Format: int32
       * @description The HTTP status code of the response.
       */
      error: number;
      /** @description One sentence that tells the client what to fix. */
      message: string;
    };
    Health: {
      /** @constant */
      status: 'ok';
    };
    Ready: {
      /** @constant */
      status: 'ready';
    };
  };
  responses: {
    /** @description Missing header, wrong scheme or malformed token: `WWW-Authenticate: Bearer realm="plants"`. Unknown, expired or revoked token, or (AUTH=jwt) a signature or claim that does not check: `WWW-Authenticate: Bearer realm="plants", error="invalid_token"`, with `error_description="The access token expired"` for an expired JWT. The server's log line for the request (its X-Request-Id) says which check failed, never the token. */
    Unauthorized: {
      headers: {
        'X-Request-Id': components['headers']['X-Request-Id'];
        'WWW-Authenticate': components['headers']['WWW-Authenticate'];
        [name: string]: unknown;
      };
      content: {
        /**
         * @example {
         *       "error": 401,
         *       "message": "authorization: the bearer token is unknown, expired or revoked"
         *     }
         */
        'application/json': components['schemas']['Error'];
      };
    };
    /** @description The token lacks the scope: `WWW-Authenticate: Bearer realm="plants", error="insufficient_scope", scope="plants:write"` (or plants:read). */
    Forbidden: {
      headers: {
        'X-Request-Id': components['headers']['X-Request-Id'];
        'WWW-Authenticate': components['headers']['WWW-Authenticate'];
        [name: string]: unknown;
      };
      content: {
        /**
         * @example {
         *       "error": 403,
         *       "message": "authorization: the token lacks the scope plants:read"
         *     }
         */
        'application/json': components['schemas']['Error'];
      };
    };
    /** @description Either the token lacks the scope plants:write: `WWW-Authenticate: Bearer realm="plants", error="insufficient_scope", scope="plants:write"`; or the caller's owner already keeps as many plants as its quota allows (MAX_PLANTS_PER_OWNER): no WWW-Authenticate, Quota-Limit and Quota-Used give the figures, `message` starts with "quota:", and nothing was stored. A retried create of a plant already stored still answers 200, and deleting a plant frees room at once, through any service process. */
    ForbiddenOrQuotaExceeded: {
      headers: {
        'X-Request-Id': components['headers']['X-Request-Id'];
        /** @description Present when the scope is missing; absent when the quota is exceeded. */
        'WWW-Authenticate'?: string;
        'Quota-Limit': components['headers']['Quota-Limit'];
        'Quota-Used': components['headers']['Quota-Used'];
        [name: string]: unknown;
      };
      content: {
        /**
         * @example {
         *       "error": 403,
         *       "message": "authorization: the token lacks the scope plants:write"
         *     }
         */
        'application/json': components['schemas']['Error'];
      };
    };
    /** @description Unknown path. */
    NotFound: {
      headers: {
        'X-Request-Id': components['headers']['X-Request-Id'];
        [name: string]: unknown;
      };
      content: {
        /**
         * @example {
         *       "error": 404,
         *       "message": "no such resource; the API reference is at /docs (and /openapi.json)"
         *     }
         */
        'application/json': components['schemas']['Error'];
      };
    };
    /** @description Known path, method it does not have. */
    MethodNotAllowed: {
      headers: {
        'X-Request-Id': components['headers']['X-Request-Id'];
        Allow: string;
        [name: string]: unknown;
      };
      content: {
        /**
         * @example {
         *       "error": 405,
         *       "message": "method not allowed here; use GET, HEAD"
         *     }
         */
        'application/json': components['schemas']['Error'];
      };
    };
    /** @description Only when rate limiting is configured (RATE_LIMIT_MAX): the principal used its allowance for the current fixed window. While limiting is on, every authenticated response also carries the RateLimit-* fields. */
    TooManyRequests: {
      headers: {
        'X-Request-Id': components['headers']['X-Request-Id'];
        'Retry-After': components['headers']['Retry-After'];
        /** @description Requests allowed per window. */
        'RateLimit-Limit': string;
        /** @description Requests left in this window. */
        'RateLimit-Remaining': string;
        /** @description Seconds until the window resets. */
        'RateLimit-Reset': string;
        [name: string]: unknown;
      };
      content: {
        /**
         * @example {
         *       "error": 429,
         *       "message": "too many requests: at most 100 per window; retry in 7 s"
         *     }
         */
        'application/json': components['schemas']['Error'];
      };
    };
    /** @description A backend the request needs (storage, token store) is unreachable or too slow (bounded, default 2 s). The outcome of a create or delete answered 503 is unknown: it may have been applied, or may still be applied shortly after. Retrying is safe: repeat the same create (200 means the plant is stored, by either attempt; 409 means another plant holds the id) or the same delete (204 or 404 both mean it is gone). A delete answered 503 never removes a plant created after it. A create is also answered 503, before its body is read and with nothing applied, while the service holds as many request bodies as it may (MAX_BODY_BYTES); retry it after Retry-After. */
    Unavailable: {
      headers: {
        'X-Request-Id': components['headers']['X-Request-Id'];
        'Retry-After': components['headers']['Retry-After'];
        [name: string]: unknown;
      };
      content: {
        /**
         * @example {
         *       "error": 503,
         *       "message": "storage is unavailable, retry later"
         *     }
         */
        'application/json': components['schemas']['Error'];
      };
    };
    /** @description Malformed HTTP, found before the request reached this operation (a bad request line or header, two Content-Length values, bad chunked framing, HTTP/1.1 without exactly one Host); the connection is closed. */
    MalformedRequest: {
      headers: {
        'X-Request-Id': components['headers']['X-Request-Id'];
        [name: string]: unknown;
      };
      content: {
        /**
         * @example {
         *       "error": 400,
         *       "message": "request: send exactly one Host header"
         *     }
         */
        'application/json': components['schemas']['Error'];
      };
    };
    /** @description Any other failure, with `error` equal to the status. 500: an unexpected fault; the body is exactly {"error":500,"message":"internal error"}. Found before the request reached the operation, each closing the connection: 400 malformed HTTP (a bad request line or header, two Content-Length values, bad chunked framing, HTTP/1.1 without exactly one Host); 408 the headers (HEADERS_TIMEOUT_MS) or the whole request (REQUEST_TIMEOUT_MS) did not arrive in time, and the request is not processed; 417 an Expect header other than 100-continue; 431 the request line and headers pass MAX_HEADER_SIZE bytes or MAX_HEADER_FIELDS fields; 501 a method this server does not implement; 505 an HTTP version other than 1.0 and 1.1. */
    OtherFailure: {
      headers: {
        'X-Request-Id': components['headers']['X-Request-Id'];
        [name: string]: unknown;
      };
      content: {
        /**
         * @example {
         *       "error": 500,
         *       "message": "internal error"
         *     }
         */
        'application/json': components['schemas']['Error'];
      };
    };
  };
  parameters: never;
  requestBodies: never;
  headers: {
    /** @description The caller's X-Request-Id when it is 1 to 128 characters of [A-Za-z0-9._:-], otherwise a new random id; also in the server's log line. */
    'X-Request-Id': string;
    'Cache-Control': 'no-store';
    'X-Content-Type-Options': 'nosniff';
    /** @description Seconds to wait before retrying. */
    'Retry-After': string;
    'WWW-Authenticate': string;
    /** @description How many plants the caller's owner may keep (MAX_PLANTS_PER_OWNER). Present on POST /plants answers 200 and 403 (quota) while a quota is configured. */
    'Quota-Limit': string;
    /** @description How many plants the caller's owner keeps, as counted by the service process that served this request (creates of the same owner running at the same time, or served by another process since it last counted, may not be included yet). Present with Quota-Limit. */
    'Quota-Used': string;
  };
  pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
  listPlants: {
    parameters: {
      query?: {
        /**
         * @description Page size, at most once. Values above 1000 are served as 1000; absent: 100. 0, negatives, fractions, non-numbers and an empty value answer 400.
         * @example 10
         */
        limit?: number;
        /**
         * @description Opaque; only a value taken from a `Link: rel="next"` header of this service. Anything else, an empty value included, answers 400. Absent: the first page. The example is the cursor after the least int64, -9223372036854775808: it lists from the lowest id, as the first page does (only a plant with that very id would be left out).
         * @example MTotOTIyMzM3MjAzNjg1NDc3NTgwOA
         */
        cursor?: string;
      };
      header?: never;
      path?: never;
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** @description One page of plants, ascending by id (exact over the whole int64 range). When more follow, a `Link` header names the next page; following next links until none is returned yields every plant exactly once. */
      200: {
        headers: {
          'X-Request-Id': components['headers']['X-Request-Id'];
          'Cache-Control': components['headers']['Cache-Control'];
          'X-Content-Type-Options': components['headers']['X-Content-Type-Options'];
          /** @description RFC 8288 link to the next page, present only when more plants follow: `</plants?limit=N&cursor=C>; rel="next"`. */
          Link?: string;
          [name: string]: unknown;
        };
        content: {
          /**
           * @example [
           *       {
           *         "name": "Monstera",
           *         "tag": "indoor"
           *       },
           *       {
           *         "name": "Fern"
           *       }
           *     ]
           */
          'application/json': components['schemas']['Plant'][];
        };
      };
      /** @description `limit` or `cursor` is not valid, or given more than once (every parameter of the query is read, however many there are); `message` names the parameter and the rule. (Malformed HTTP is a 400 too, described under `default`.) */
      400: {
        headers: {
          'X-Request-Id': components['headers']['X-Request-Id'];
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": 400,
           *       "message": "cursor: must be a cursor taken from a next link"
           *     }
           */
          'application/json': components['schemas']['Error'];
        };
      };
      401: components['responses']['Unauthorized'];
      403: components['responses']['Forbidden'];
      429: components['responses']['TooManyRequests'];
      503: components['responses']['Unavailable'];
      default: components['responses']['OtherFailure'];
    };
  };
  createPlant: {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /** @description At most 16384 bytes of UTF-8 JSON, objects and arrays nested at most 64 deep, at most 10000 object members and array elements in all, no member name repeated. Members other than id, name and tag are ignored: not stored, not echoed. */
    requestBody: {
      content: {
        /**
         * @example {
         *       "id": 1,
         *       "name": "Monstera",
         *       "tag": "indoor"
         *     }
         */
        'application/json': components['schemas']['NewPlant'];
      };
    };
    responses: {
      /** @description The stored plant. With a quota (MAX_PLANTS_PER_OWNER, on by default), Quota-Limit and Quota-Used give the owner's own figures (on MongoDB, once the serving process has counted the owner: nearly always, see docs/storage.md). */
      200: {
        headers: {
          'X-Request-Id': components['headers']['X-Request-Id'];
          'Cache-Control': components['headers']['Cache-Control'];
          'X-Content-Type-Options': components['headers']['X-Content-Type-Options'];
          'Quota-Limit': components['headers']['Quota-Limit'];
          'Quota-Used': components['headers']['Quota-Used'];
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['Plant'];
        };
      };
      /** @description The body is not UTF-8 JSON, repeats a member name, nests deeper than 64, holds more than 10000 members and elements, is not an object, or breaks a field rule; `message` names the field and the rule, e.g. "name: must be 1 to 200 characters". A member sent as null (what many serializers write for an unset optional field) is refused: leave an optional field (tag) out instead. (Malformed HTTP is a 400 too, described under `default`.) */
      400: {
        headers: {
          'X-Request-Id': components['headers']['X-Request-Id'];
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": 400,
           *       "message": "name: must be 1 to 200 characters"
           *     }
           */
          'application/json': components['schemas']['Error'];
        };
      };
      401: components['responses']['Unauthorized'];
      403: components['responses']['ForbiddenOrQuotaExceeded'];
      /** @description The owner already has a plant with this id and a different name or tag; nothing was changed. */
      409: {
        headers: {
          'X-Request-Id': components['headers']['X-Request-Id'];
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": 409,
           *       "message": "id: a plant with this id and a different name or tag already exists"
           *     }
           */
          'application/json': components['schemas']['Error'];
        };
      };
      /** @description The body is larger than 16384 bytes; it is not read, and the connection is closed. */
      413: {
        headers: {
          'X-Request-Id': components['headers']['X-Request-Id'];
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": 413,
           *       "message": "body: must be at most 16384 bytes"
           *     }
           */
          'application/json': components['schemas']['Error'];
        };
      };
      /** @description Content-Type is not application/json (parameters such as charset=utf-8 are allowed; another charset is not), or the body has a Content-Encoding other than identity (send it uncompressed). */
      415: {
        headers: {
          'X-Request-Id': components['headers']['X-Request-Id'];
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": 415,
           *       "message": "content-type: must be application/json"
           *     }
           */
          'application/json': components['schemas']['Error'];
        };
      };
      429: components['responses']['TooManyRequests'];
      503: components['responses']['Unavailable'];
      /** @description The store is full for every owner (in-memory storage: MEMORY_MAX_PLANTS, by default derived from the heap the process may use); nothing was changed. Retrying helps only once plants are deleted. */
      507: {
        headers: {
          'X-Request-Id': components['headers']['X-Request-Id'];
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": 507,
           *       "message": "storage: the store is full; no plant can be created until plants are deleted"
           *     }
           */
          'application/json': components['schemas']['Error'];
        };
      };
      default: components['responses']['OtherFailure'];
    };
  };
  deletePlant: {
    parameters: {
      query?: never;
      header?: never;
      path: {
        /**
         * @description A decimal int64: optional leading "-", 1 to 19 digits, from -9223372036854775808 to 9223372036854775807. Anything else ("abc", "1.5", "+1", "0x10", out of range) answers 400.
         * @example 1
         */
        id: string;
      };
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** @description Deleted; no body. */
      204: {
        headers: {
          'X-Request-Id': components['headers']['X-Request-Id'];
          'Cache-Control': components['headers']['Cache-Control'];
          'X-Content-Type-Options': components['headers']['X-Content-Type-Options'];
          [name: string]: unknown;
        };
        content?: never;
      };
      /** @description The id is not a decimal int64. (Malformed HTTP is a 400 too, described under `default`.) */
      400: {
        headers: {
          'X-Request-Id': components['headers']['X-Request-Id'];
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": 400,
           *       "message": "id: must be an integer from -9223372036854775808 to 9223372036854775807"
           *     }
           */
          'application/json': components['schemas']['Error'];
        };
      };
      401: components['responses']['Unauthorized'];
      403: components['responses']['Forbidden'];
      /** @description The caller's owner has no plant with this id (never existed, already deleted, or another owner's). */
      404: {
        headers: {
          'X-Request-Id': components['headers']['X-Request-Id'];
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": 404,
           *       "message": "id: no plant with this id"
           *     }
           */
          'application/json': components['schemas']['Error'];
        };
      };
      429: components['responses']['TooManyRequests'];
      503: components['responses']['Unavailable'];
      default: components['responses']['OtherFailure'];
    };
  };
  health: {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** @description The process serves requests. */
      200: {
        headers: {
          'X-Request-Id': components['headers']['X-Request-Id'];
          'Cache-Control': components['headers']['Cache-Control'];
          'X-Content-Type-Options': components['headers']['X-Content-Type-Options'];
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['Health'];
        };
      };
      400: components['responses']['MalformedRequest'];
      default: components['responses']['OtherFailure'];
    };
  };
  ready: {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** @description Every configured backend answers. */
      200: {
        headers: {
          'X-Request-Id': components['headers']['X-Request-Id'];
          'Cache-Control': components['headers']['Cache-Control'];
          'X-Content-Type-Options': components['headers']['X-Content-Type-Options'];
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['Ready'];
        };
      };
      400: components['responses']['MalformedRequest'];
      /** @description A backend does not answer; `message` names which (storage, token store), never its address. */
      503: {
        headers: {
          'X-Request-Id': components['headers']['X-Request-Id'];
          'Retry-After': components['headers']['Retry-After'];
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": 503,
           *       "message": "not ready: storage does not answer"
           *     }
           */
          'application/json': components['schemas']['Error'];
        };
      };
      default: components['responses']['OtherFailure'];
    };
  };
  openapi: {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** @description The OpenAPI 3.1.0 document. */
      200: {
        headers: {
          'X-Request-Id': components['headers']['X-Request-Id'];
          'Cache-Control': components['headers']['Cache-Control'];
          'X-Content-Type-Options': components['headers']['X-Content-Type-Options'];
          [name: string]: unknown;
        };
        content: {
          'application/json': Record<string, never>;
        };
      };
      400: components['responses']['MalformedRequest'];
      default: components['responses']['OtherFailure'];
    };
  };
  metrics: {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** @description The metrics, in the Prometheus text exposition format 0.0.4. */
      200: {
        headers: {
          'X-Request-Id': components['headers']['X-Request-Id'];
          'Cache-Control': components['headers']['Cache-Control'];
          'X-Content-Type-Options': components['headers']['X-Content-Type-Options'];
          [name: string]: unknown;
        };
        content: {
          'text/plain': string;
        };
      };
      404: components['responses']['NotFound'];
      default: components['responses']['OtherFailure'];
    };
  };
  docs: {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** @description An HTML page. */
      200: {
        headers: {
          'X-Request-Id': components['headers']['X-Request-Id'];
          'Cache-Control': components['headers']['Cache-Control'];
          'X-Content-Type-Options': components['headers']['X-Content-Type-Options'];
          'Content-Security-Policy': string;
          [name: string]: unknown;
        };
        content: {
          'text/html': string;
        };
      };
      400: components['responses']['MalformedRequest'];
      default: components['responses']['OtherFailure'];
    };
  };
}
