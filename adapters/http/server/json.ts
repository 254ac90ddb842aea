import * as E from 'fp-ts/lib/Either.js';
import { countMembers, malformed, measure, restoreNumbers, type JsonLimits, type MalformedBody } from './json-text.js';

export type { JsonLimits, MalformedBody };

/**
 * JSON request bodies, parsed by V8's own JSON.parse (linear, iterative, and one grammar for every Node version),
 * with three things JSON.parse does not do:
 *
 * - Bounds. A linear pre-scan of the bytes counts nesting depth and members and elements before anything is built,
 *   so what a body may allocate is bounded (`JSON_LIMITS`), whatever BODY_LIMIT is.
 * - Exact numbers. Every number comes out as a lossless-json `LosslessNumber` holding its exact source text, so an
 *   int64 beyond 2^53 is never rounded: a second linear walk over the (already validated) text puts each number's
 *   source back in place. One path on every runtime: Node 22+ could hand the source text to a reviver (`context.source`),
 *   but a reviver takes V8's slow JSON.parse, which costs a POST 6% more instructions than the walk
 *   (docs/performance.md).
 * - Duplicate members (`{"id":1,"id":2}`) are refused: JSON.parse would silently keep the last one.
 *
 * `__proto__` members stay ordinary own properties (JSON.parse defines them, it never assigns them).
 */

/** The bounds of a request body (docs/operations.md, "Limits"). A plant needs depth 1 and 3 members. */
export const JSON_LIMITS: JsonLimits = { maxDepth: 64, maxValues: 10_000 };

/** The reason given for `{"a":1,"a":2}`. */
export const REPEATED_MEMBER = 'must not repeat a member name';

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
    const measured = measure(bytes, limits);
    if (E.isLeft(measured)) return measured;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (e) {
      if (e instanceof SyntaxError) return malformed(`must be valid JSON (${e.message})`);
      if (e instanceof RangeError) return malformed('is nested too deeply');
      throw e;
    }
    // Fewer members in what was built than in the text: some name was repeated and JSON.parse kept the last.
    if (countMembers(value) !== measured.right.members) return malformed(REPEATED_MEMBER);
    return E.right(restoreNumbers(text, value));
  };

/** Parses a request body within JSON_LIMITS, keeping every number's exact text. */
export const parseJson = jsonParser(JSON_LIMITS);
