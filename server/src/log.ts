/**
 * The one logger shape every layer takes: pino's (Fastify's `app.log`) fits it, and so do the
 * recorders of the tests. Lives below drivers, services and routes so all of them may import it.
 */
export interface Logger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
  debug(obj: object, msg?: string): void;
}

/** For tests and benches. */
export const SILENT_LOGGER: Logger = { info() {}, warn() {}, error() {}, debug() {} };
