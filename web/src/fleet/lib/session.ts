/**
 * Who is signed in (`GET me`, FleetMe) and the console's one status line (role=status, what a
 * call answered: "X is being added", an error). One zustand store each; React subscribes.
 */
import { create } from 'zustand';
import type { FleetMe } from '@kvm/protocol/fleet';
import { ApiError, api, messageOf } from './api';

export interface SessionState {
  /** undefined while the first `GET me` runs; null when signed out. */
  me: FleetMe | null | undefined;
}

export const useSession = create<SessionState>(() => ({ me: undefined }));

export async function loadMe(): Promise<FleetMe | null> {
  try {
    const me = await api.get<FleetMe>('me');
    useSession.setState({ me });
    return me;
  } catch {
    // 401 (or no answer): the sign-in page
    useSession.setState({ me: null });
    return null;
  }
}

export function signedOut(): void {
  useSession.setState({ me: null });
}

export function isAdmin(me: FleetMe | null | undefined): boolean {
  return me?.role === 'admin';
}

export interface StatusState {
  text: string;
  error: boolean;
}

export const useStatus = create<StatusState>(() => ({ text: '', error: false }));

export function showStatus(text: string, error = false): void {
  useStatus.setState({ text, error });
}

/** Shows a failed call's message; a lost session signs out (the guard shows sign-in). */
export function showError(e: unknown): void {
  if (e instanceof ApiError && e.status === 401 && e.error !== 'TotpRequiredError') {
    if (useSession.getState().me) signedOut();
  }
  showStatus(messageOf(e), true);
}
