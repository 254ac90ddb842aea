import type { PlantRepository } from '../ports/plant-repository.js';
import type { TokenVerifier } from '../ports/token-verifier.js';

export type Backend = 'storage' | 'token store';

/** Default bound on a readiness answer: well under the 1 s that probes (Kubernetes' default) wait. */
export const READINESS_TIMEOUT_MS = 500;

/** How long a readiness answer is reused: it needs no token, so at most one check per window reaches the backends. */
export const READINESS_REUSE_MS = 1000;

/**
 * The backends that do not answer now, by name; empty when ready. Pinged in parallel, answered within `timeoutMs` (a
 * ping still running or thrown is not ready). A running ping and a running check are shared, so a hung backend gets one
 * ping at a time, and an answer is reused for `reuseMs`.
 */
export const checkReadiness = ({
  plants,
  tokens,
  timeoutMs = READINESS_TIMEOUT_MS,
  reuseMs = READINESS_REUSE_MS,
}: {
  readonly plants: PlantRepository;
  readonly tokens: TokenVerifier;
  readonly timeoutMs?: number;
  readonly reuseMs?: number;
}) => {
  const running = new Map<Backend, Promise<boolean>>();
  const answers = (backend: Backend, ping: () => Promise<{ readonly _tag: 'Left' | 'Right' }>): Promise<boolean> => {
    let pending = running.get(backend);
    if (pending === undefined) {
      pending = ping().then(
        (result) => result._tag === 'Right',
        () => false,
      );
      running.set(backend, pending);
      void pending.finally(() => running.delete(backend));
    }
    return pending;
  };

  const check = async (): Promise<readonly Backend[]> => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), timeoutMs);
    });
    try {
      const pings = [['storage', plants.ping] as const, ['token store', tokens.ping] as const];
      const up = await Promise.all(pings.map(([backend, ping]) => Promise.race([answers(backend, ping), late])));
      return pings.filter((_, i) => !up[i]).map(([backend]) => backend);
    } finally {
      clearTimeout(timer);
    }
  };

  let checking: Promise<readonly Backend[]> | undefined;
  let last: { readonly at: number; readonly down: readonly Backend[] } | undefined;
  return (): Promise<readonly Backend[]> => {
    if (last !== undefined && performance.now() - last.at < reuseMs) return Promise.resolve(last.down);
    checking ??= check().then((down) => {
      last = { at: performance.now(), down };
      checking = undefined;
      return down;
    });
    return checking;
  };
};
