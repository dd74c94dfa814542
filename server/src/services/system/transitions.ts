/**
 * TEMPORARY stand-in for `@kvm/protocol/transitions` (web/src/lib/transitions.ts's
 * checkTransition, being moved to protocol/ by another change): safe-change.ts imports it from
 * here until then; switching is its one import line, and this file goes.
 */
export type TransitionMap<S extends string> = { readonly [From in S]: readonly S[] };

export class IllegalTransitionError extends Error {
  constructor(client: string, from: string, to: string) {
    super(`${client}: illegal state transition ${from} -> ${to}`);
    this.name = 'IllegalTransitionError';
  }
}

/** Whether `from -> to` may happen; an illegal move throws under the tests, else is logged and refused. */
export function checkTransition<S extends string>(
  client: string,
  map: TransitionMap<S>,
  from: S,
  to: S,
): boolean {
  if (from === to) return false;
  if (map[from].includes(to)) return true;
  const err = new IllegalTransitionError(client, from, to);
  if (process.env['VITEST'] !== undefined) throw err;
  console.error(err.message);
  return false;
}
