import { randomBytes } from 'node:crypto';

/** 32 random bytes in base64url, never starting with "-" (read as an option after a command): 0.02 bits less. */
export const newToken = (): string => {
  for (;;) {
    const token = randomBytes(32).toString('base64url');
    if (!token.startsWith('-')) return token;
  }
};
