/**
 * Explicit state machines (noVNC's `_updateConnectionState`), shared by the console's protocol
 * clients and the server's long-lived flows (the process supervisor, safe network changes, the
 * upgrade): each machine lists, for every state, the states it may move to, and checks every move
 * in its `setState`. An illegal move is a bug: it throws under the tests (and in the console's
 * development builds) so a test that drives the machine into it fails loudly; in production it is
 * logged and refused, so a user's session or the device is never torn down by it.
 */
// protocol/ compiles without the DOM or Node typings; both runtimes have a console.
declare const console: { error(message: string): void };

export type TransitionMap<S extends string> = { readonly [From in S]: readonly S[] };

export class IllegalTransitionError extends Error {
  constructor(client: string, from: string, to: string) {
    super(`${client}: illegal state transition ${from} -> ${to}`);
    this.name = 'IllegalTransitionError';
  }
}

/** Whether an illegal transition throws (tests, the console's development build) or is logged and refused. */
function strict(): boolean {
  const env = (import.meta as { env?: { MODE?: string; DEV?: boolean } }).env;
  if (env?.MODE === 'test' || env?.DEV === true) return true;
  const proc = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process;
  return proc?.env?.['VITEST'] !== undefined;
}

/**
 * Checks `from -> to` against `map`. Returns whether the move may happen: a move to the same
 * state is a no-op (false) and never an error; an illegal move throws when strict, else is
 * logged and refused (false).
 */
export function checkTransition<S extends string>(
  client: string,
  map: TransitionMap<S>,
  from: S,
  to: S,
): boolean {
  if (from === to) return false;
  if (map[from].includes(to)) return true;
  const err = new IllegalTransitionError(client, from, to);
  if (strict()) throw err;
  console.error(err.message);
  return false;
}
