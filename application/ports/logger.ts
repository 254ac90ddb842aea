/** Structured logging, as the inner layers and adapters need it; pino satisfies it as it is. */
export interface Logger {
  readonly debug: (fields: object, message: string) => void;
  readonly info: (fields: object, message: string) => void;
  readonly warn: (fields: object, message: string) => void;
  readonly error: (fields: object, message: string) => void;
}
