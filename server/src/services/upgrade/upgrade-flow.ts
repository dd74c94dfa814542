/**
 * The upgrade flow as two checked state machines (the console's clients keep theirs the same
 * way: protocol's `checkTransition`). Every change goes through `FlowState.set`, which checks
 * it against the map: an illegal move is a bug and throws under the tests; in production it is
 * logged and refused.
 *
 * The package slot (`<data>/upgrade/update.pkg` and its `.part`):
 *
 *   none ──download──▶ downloading ──complete──▶ ready ──download/upload──▶ …
 *     └────upload───▶ uploading ────complete──▶ ready
 *   a failed or cancelled transfer settles on `ready` when an older package is still there,
 *   else `none`; an upload first cancels a running download and waits for it to settle.
 *
 * The install (`start`): idle ──▶ installing ──▶ handed_over (the trial is written; the server
 * stops a second later) or back to idle (refused or failed).
 */
import { checkTransition, type TransitionMap } from '@kvm/protocol/transitions';

export type PackagePhase = 'none' | 'downloading' | 'uploading' | 'ready';

export const PACKAGE_TRANSITIONS: TransitionMap<PackagePhase> = {
  none: ['downloading', 'uploading', 'ready'],
  downloading: ['none', 'ready'],
  uploading: ['none', 'ready'],
  ready: ['downloading', 'uploading', 'none'],
};

export type InstallPhase = 'idle' | 'installing' | 'handed_over';

export const INSTALL_TRANSITIONS: TransitionMap<InstallPhase> = {
  idle: ['installing'],
  installing: ['idle', 'handed_over'],
  handed_over: [],
};

/** One state and its map: every change is checked. */
export class FlowState<S extends string> {
  constructor(
    private readonly name: string,
    private readonly map: TransitionMap<S>,
    private current: S,
  ) {}

  get value(): S {
    return this.current;
  }

  /** Moves to `to` when the map allows it (a move to the same state is a no-op). */
  set(to: S): void {
    if (checkTransition(this.name, this.map, this.current, to)) this.current = to;
  }
}
