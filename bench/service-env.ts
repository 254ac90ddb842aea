/** The bench's token, known to the service and the floor alike. */
export const TOKEN = 'bench-token';

/**
 * The environment the bench runs the service with (bootstrap/main.js): loopback, pino at info, one static token, and
 * the quota on (its code path is measured) but out of reach, since one owner creates every plant of a run.
 */
export const serviceEnv = (port: number): Record<string, string> => ({
  PORT: String(port),
  HOST: '127.0.0.1',
  LOG_LEVEL: 'info',
  AUTH_TOKENS: JSON.stringify([
    { token: TOKEN, owner: 'bench', subject: 'bench', scopes: ['plants:read', 'plants:write'] },
  ]),
  MAX_PLANTS_PER_OWNER: '1000000000',
  MEMORY_MAX_PLANTS: '1000000000',
});
