import * as E from 'fp-ts/lib/Either.js';
import { LosslessNumber } from 'lossless-json';
import { countMembers, malformed, measure, restoreNumbers, type JsonLimits, type MalformedBody } from './json-text.js';

export type { JsonLimits, MalformedBody };

/**
 * JSON request bodies, parsed by V8's own JSON.parse (linear, iterative, and one grammar for every Node version),
 * with three things JSON.parse does not do:
 *
 * - Bounds. A linear pre-scan of the bytes counts nesting depth and members and elements before anything is built,
 *   so what a body may allocate is bounded (`JSON_LIMITS`), whatever BODY_LIMIT is.
 * - Exact numbers. Every number comes out as a lossless-json `LosslessNumber` holding its exact source text, so an
 *   int64 beyond 2^53 is never rounded. Node 22+ gives the source text to a reviver (`context.source`); on Node 20
 *   a second linear walk over the (already validated) text puts each number's source back in place.
 * - Duplicate members (`{"id":1,"id":2}`) are refused: JSON.parse would silently keep the last one.
 *
 * `__proto__` members stay ordinary own properties (JSON.parse defines them, it never assigns them).
 */

/** The bounds of a request body (docs/operations.md, "Limits"). A plant needs depth 1 and 3 members. */
export const JSON_LIMITS: JsonLimits = { maxDepth: 64, maxValues: 10_000 };

/** How numbers get their exact source text: a reviver's `context.source` (Node 22+), or a walk over the text. */
export type NumberSource = 'reviver-source' | 'text-walk';

/** Whether this runtime gives revivers the source text of primitives (JSON.parse source text access). */
export const reviverSourceAvailable: boolean = (() => {
  let seen: unknown;
  JSON.parse('12345678901234567890', (_key: string, value: unknown, context?: { source?: string }) => {
    seen = context?.source;
    return value;
  });
  return seen === '12345678901234567890';
})();

/** The reason given for `{"a":1,"a":2}`. */
export const REPEATED_MEMBER = 'must not repeat a member name';

/** Node 22+: the reviver is given each number's source text. */
const parseWithSourceText = (text: string): unknown =>
  JSON.parse(text, (_key: string, value: unknown, context?: { source?: string }) =>
    typeof value === 'number' ? new LosslessNumber(context?.source as string) : value,
  );

const utf8 = new TextDecoder('utf-8', { fatal: true });

export interface JsonParserOptions {
  readonly numbers: NumberSource;
  readonly limits: JsonLimits;
}

/**
 * A parser of JSON bodies. `numbers` picks how exact numbers are obtained; both give the same value and the same
 * failure for every input (tested against each other). `reviver-source` needs Node 22+.
 */
export const jsonParser = ({ numbers, limits }: JsonParserOptions) => {
  if (numbers === 'reviver-source' && !reviverSourceAvailable) {
    throw new Error('JSON.parse source text access (Node 22+) is not available on this runtime');
  }
  const parse = numbers === 'reviver-source' ? parseWithSourceText : (text: string): unknown => JSON.parse(text);
  return (bytes: Uint8Array): E.Either<MalformedBody, unknown> => {
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
      value = parse(text);
    } catch (e) {
      if (e instanceof SyntaxError) return malformed(`must be valid JSON (${e.message})`);
      if (e instanceof RangeError) return malformed('is nested too deeply');
      throw e;
    }
    // Fewer members in what was built than in the text: some name was repeated and JSON.parse kept the last.
    if (countMembers(value) !== measured.right.members) return malformed(REPEATED_MEMBER);
    return E.right(numbers === 'reviver-source' ? value : restoreNumbers(text, value));
  };
};

/** The strategy this runtime uses: source text from the reviver where Node offers it, else the text walk. */
export const numberSource: NumberSource = reviverSourceAvailable ? 'reviver-source' : 'text-walk';

/** Parses a request body within JSON_LIMITS, keeping every number's exact text. */
export const parseJson = jsonParser({ numbers: numberSource, limits: JSON_LIMITS });
