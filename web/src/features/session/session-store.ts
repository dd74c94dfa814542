/** User session (SPEC 3 "User session"). State only; the calls are in session-actions.ts. */
import { create } from 'zustand';
import type { AuthCheckResult } from '@kvm/protocol/api';

export interface SessionState {
  /** Result of GET /api/auth/check. */
  userInfo: AuthCheckResult | null;
  /** null while not known. */
  isLoggedIn: boolean | null;
  /** null while the init check has not answered. */
  isInited: boolean | null;
  /** From GET /api/init/is_inited; SPEC 3 default English. */
  countryCode: string;
  twofaEnabled: boolean;
  loading: {
    init: boolean;
    auth: boolean;
    login: boolean;
  };
}

export const INITIAL_SESSION: SessionState = {
  userInfo: null,
  isLoggedIn: null,
  isInited: null,
  countryCode: 'en',
  twofaEnabled: false,
  loading: { init: false, auth: false, login: false },
};

export const useSession = create<SessionState>(() => INITIAL_SESSION);

export function setLoading(flag: keyof SessionState['loading'], value: boolean): void {
  useSession.setState((state) => ({ loading: { ...state.loading, [flag]: value } }));
}
