import { isBearerToken, TOKEN_MAX } from '../../../domain/credentials.js';

export { TOKEN_MAX };
const SCHEME = 'bearer';
const SPACE = 0x20;

/**
 * The token of an `Authorization: Bearer <token>` header (scheme case-insensitive, then 1*SP as RFC 6750 allows),
 * or `undefined` when absent or malformed. Linear in the header's length, which Node's header size limit bounds;
 * the token itself is checked only when it is at most TOKEN_MAX characters, however many spaces precede it.
 */
export const bearerToken = (header: string | undefined): string | undefined => {
  if (header === undefined || header.length <= SCHEME.length + 1) return undefined;
  if (header.slice(0, SCHEME.length).toLowerCase() !== SCHEME || header.charCodeAt(SCHEME.length) !== SPACE) {
    return undefined;
  }
  let start = SCHEME.length + 1;
  while (header.charCodeAt(start) === SPACE) start++;
  const length = header.length - start;
  if (length < 1 || length > TOKEN_MAX) return undefined;
  const token = header.slice(start);
  return isBearerToken(token) ? token : undefined;
};
