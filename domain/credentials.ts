/** The longest bearer token the service reads (the contract's bound). */
export const TOKEN_MAX = 4096;

/** RFC 6750 `b64token`. Its character classes are disjoint, so the match is linear. */
const B64TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;

/**
 * Whether the text can be a bearer token at all: an RFC 6750 b64token of 1 to TOKEN_MAX characters. The one rule
 * for the Authorization header, the static token set and the token CLI.
 */
export const isBearerToken = (s: string): boolean => s.length >= 1 && s.length <= TOKEN_MAX && B64TOKEN.test(s);
