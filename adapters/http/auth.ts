/** RFC 6750 `b64token` after a case-insensitive "Bearer" and one or more spaces. */
const BEARER = /^bearer +([A-Za-z0-9\-._~+/]+=*)$/i;
export const TOKEN_MAX = 4096;

/** The token of an `Authorization: Bearer <token>` header, or `undefined` when absent or malformed. */
export const bearerToken = (header: string | undefined): string | undefined => {
  if (header === undefined || header.length > TOKEN_MAX + 16) return undefined;
  const token = BEARER.exec(header)?.[1];
  return token !== undefined && token.length <= TOKEN_MAX ? token : undefined;
};
