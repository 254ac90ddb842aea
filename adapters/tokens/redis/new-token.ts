import { randomBytes } from 'node:crypto';

/**
 * A fresh bearer token (issued by the Redis store; also the generated local one, bootstrap/backends.ts): 32 random bytes in base64url (43 characters, 256 bits), never one that starts with "-". Such a
 * token, pasted after a command (`npm run token -- revoke <token>`, a script's argument), reads as an option: 1 token
 * in 64 did (the multi-process suite's revoke failed so once). Leaving those out costs 1/64 of the space, 0.02 bits.
 */
export const newToken = (): string => {
  for (;;) {
    const token = randomBytes(32).toString('base64url');
    if (!token.startsWith('-')) return token;
  }
};
