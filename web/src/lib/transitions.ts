/**
 * Explicit state machines for the console's protocol clients (noVNC's
 * `_updateConnectionState`): each client lists, for every state, the states it may move to,
 * and checks every move in its `setState`. An illegal move is a bug: it throws under the tests
 * (and in development builds) so a test that drives the client into it fails loudly; in a
 * production build it is logged and refused, so a user's session is never torn down by it.
 */
export type TransitionMap<S extends string> = { readonly [From in S]: readonly S[] };

export class IllegalTransitionError extends Error {
  constructor(client: string, from: string, to: string) {
    super(`${client}: illegal state transition ${from} -> ${to}`);
    this.name = 'IllegalTransitionError';
  }
}

/** Whether an illegal transition throws (tests, development) or is logged and refused. */
function strict(): boolean {
  const env = (import.meta as { env?: { MODE?: string; DEV?: boolean } }).env;
  if (env?.MODE === 'test' || env?.DEV === true) return true;
  return typeof process !== 'undefined' && process.env?.VITEST !== undefined;
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
