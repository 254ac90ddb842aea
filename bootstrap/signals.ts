/**
 * SIGTERM and SIGINT are caught from the moment this module is evaluated (main.ts imports it first, and
 * scripts/launch.mjs before main), so a signal during start-up is an ordinary shutdown, never a kill by the signal.
 * A signal that came before anyone listened is handed to the first listener.
 */
type StopSignal = 'SIGTERM' | 'SIGINT';

let received: StopSignal | undefined;
const listeners: Array<(signal: StopSignal) => void> = [];

const onSignal = (signal: StopSignal) => {
  received ??= signal;
  for (const listener of listeners) listener(signal);
};
process.on('SIGTERM', onSignal);
process.on('SIGINT', onSignal);

/** Calls `listener` on every stop signal; at once when one already came. */
export const onStopSignal = (listener: (signal: StopSignal) => void): void => {
  listeners.push(listener);
  if (received !== undefined) listener(received);
};
