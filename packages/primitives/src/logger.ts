/**
 * The logging surface every package writes to. pino's and console's methods both satisfy it:
 * structured fields first, then a message. Fields never carry credentials. An error goes under
 * `err`, as the thrown value itself (pino's `err` serializer keeps its type, message, stack, code and
 * cause; a message string would drop all but one), in every package.
 */
export interface Logger {
  debug(fields: Record<string, unknown>, message: string): void;
  info(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
  error(fields: Record<string, unknown>, message: string): void;
}

const noop = (): void => {};

/** A logger that drops everything: the default, so tests and libraries are silent unless asked. */
export const silentLogger: Logger = Object.freeze({ debug: noop, info: noop, warn: noop, error: noop });
