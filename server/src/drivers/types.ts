/**
 * What every driver shares: its lifecycle, and how one that cannot run here says why. A
 * subsystem's own interface, state and errors are in `drivers/<subsystem>/types.ts`.
 */
import { BadRequestError } from '../errors';

export interface Lifecycle {
  init(): Promise<void>;
  dispose(): Promise<void>;
}

export interface Availability {
  available: boolean;
  /** Why not, for the user ('Network namespaces need root'); null when available. */
  reason: string | null;
}

/** A system-group feature this device does not have here (answered 400, as GL does). */
export class SystemFeatureUnavailableError extends BadRequestError {}
