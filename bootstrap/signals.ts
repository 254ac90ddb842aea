/** SIGTERM and SIGINT are a shutdown from this module's evaluation on; an early signal goes to the first listener. */
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
