import * as E from 'fp-ts/lib/Either.js';
import { LosslessNumber } from 'lossless-json';

/**
 * JSON request bodies, parsed by V8's own JSON.parse (linear, iterative), with three things it does not do alone:
 *
 * - Bounds. A linear pre-scan of the bytes counts nesting depth and members and elements before anything is built,
 *   so what a body may allocate is bounded (`JSON_LIMITS`), whatever BODY_LIMIT is.
 * - Exact numbers. The reviver gets each number's source text (`context.source`, Node.js 22 and later) and makes it a
 *   lossless-json `LosslessNumber`, so an int64 beyond 2^53 is never rounded.
 * - Duplicate members (`{"id":1,"id":2}`) are refused: JSON.parse keeps the last one silently, so the members the
 *   reviver sees are counted against those the pre-scan found.
 *
 * `__proto__` members stay ordinary own properties (JSON.parse and its reviver define them, never assign them).
 */

/** `application/json`, optionally with parameters; a charset other than UTF-8 is refused rather than misread. */
export const isJsonContentType = (header: string | undefined): boolean => {
  if (header === undefined) return false;
  if (header === 'application/json') return true; // the usual spelling, without splitting it
  const [type = '', ...params] = header.split(';');
  if (type.trim().toLowerCase() !== 'application/json') return false;
  return params.every((param) => {
    const [name = '', value = ''] = param.split('=');
    return name.trim().toLowerCase() !== 'charset' || /^"?utf-?8"?$/i.test(value.trim());
  });
};

/** No content coding, or `identity`: a coded body would be read as its coded bytes. */
export const isIdentityEncoding = (header: string): boolean => header.trim().toLowerCase() === 'identity';

/** A body that is not the bounded, exact JSON read here; the API's failure map (api/failures.ts) answers it. */
export type MalformedBody = { readonly _tag: 'MalformedBody'; readonly reason: string };

export interface JsonLimits {
  /** Deepest nesting of objects and arrays; the body's own object is depth 1. */
  readonly maxDepth: number;
  /** Object members plus array elements, counted over the whole document. */
  readonly maxValues: number;
}

const malformed = (reason: string): E.Either<MalformedBody, never> => E.left({ _tag: 'MalformedBody', reason });

/** The bounds of a request body (docs/operations.md, "Limits"). A plant needs depth 1 and 3 members. */
export const JSON_LIMITS: JsonLimits = { maxDepth: 64, maxValues: 10_000 };

/** The reason given for `{"a":1,"a":2}`. */
export const REPEATED_MEMBER = 'must not repeat a member name';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** A parser of JSON bodies within `limits`, every number a LosslessNumber of its exact source text. */
export const jsonParser =
  (limits: JsonLimits) =>
  (bytes: Uint8Array): E.Either<MalformedBody, unknown> => {
    let text: string;
    try {
      text = utf8.decode(bytes);
    } catch {
      return malformed('must be UTF-8 encoded');
    }
    // One pass over the bytes, before anything is built (written here, not called: one call fewer per body): the
    // depth of nesting and the number of members and elements, stopping at the first bound crossed. It tells strings
    // (skipped) from structure and does not validate: JSON.parse does that next. In valid JSON every member has one
    // ':' and, in each non-empty object or array, the members or elements are its commas plus one.
    let depth = 0;
    let values = 0;
    let found = 0;
    let opened = false;
    for (let i = 0; i < bytes.length; i++) {
      const b = bytes[i] as number;
      if (b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09) continue;
      if (opened) {
        opened = false;
        if (b !== CLOSE_BRACE && b !== CLOSE_BRACKET) values++;
      }
      if (b === QUOTE) {
        // Skip the string: an escaped character never ends it (each escape is skipped whole, so this stays linear).
        for (i++; i < bytes.length; i++) {
          const c = bytes[i] as number;
          if (c === QUOTE) break;
          if (c === BACKSLASH) i++;
        }
      } else if (b === OPEN_BRACE || b === OPEN_BRACKET) {
        if (++depth > limits.maxDepth) {
          return malformed(`must not nest objects and arrays more than ${limits.maxDepth} deep`);
        }
        opened = true;
      } else if (b === CLOSE_BRACE || b === CLOSE_BRACKET) depth--;
      else if (b === COMMA) values++;
      else if (b === COLON) found++;
      if (values > limits.maxValues) {
        return malformed(`must have at most ${limits.maxValues} object members and array elements in total`);
      }
    }
    // Members the reviver is handed (the root's own call, with key '', is one more than those).
    let members = -1;
    let value: unknown;
    try {
      value = JSON.parse(text, function (this: unknown, _key: string, value: unknown, context?: { source?: string }) {
        if (!Array.isArray(this)) members += 1;
        return typeof value === 'number' ? new LosslessNumber(context?.source ?? String(value)) : value;
      } as (key: string, value: unknown) => unknown);
    } catch (e) {
      if (e instanceof SyntaxError) return malformed(`must be valid JSON (${e.message})`);
      if (e instanceof RangeError) return malformed('is nested too deeply');
      throw e;
    }
    if (members !== found) return malformed(REPEATED_MEMBER);
    return E.right(value);
  };

/** Parses a request body within JSON_LIMITS, keeping every number's exact text. */
export const parseJson = jsonParser(JSON_LIMITS);
