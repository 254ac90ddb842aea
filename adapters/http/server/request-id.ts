import { randomUUID } from 'node:crypto';

export const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** The caller's X-Request-Id when it is 1 to 128 characters of `[A-Za-z0-9._:-]`, otherwise a new random id. */
export const requestIdFrom = (given: string | readonly string[] | undefined): string =>
  typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
