/** Result shapes of the calls of SPEC.md section 7 (the `result` of the envelope). */
import type { UserConfig } from './settings';

/** GET /api/init/is_inited (public). */
export interface InitStatus {
  is_inited: boolean;
  country_code: string;
}

/** POST /api/auth/login and /api/auth/login_with_2fa (GL body). */
export interface LoginResult {
  token: string;
}

/** GET /api/2fa/is_enabled (public). */
export interface TwoFaStatus {
  enabled: boolean;
  /** Whether this browser's remember-this-device cookie is valid (no code needed). */
  trusted: boolean;
}

/** GET /api/2fa/create: a fresh secret, not yet active. */
export interface TwoFaCreateResult {
  secret: string;
  uri: string;
}

/** GET /api/2fa/show (404 when 2FA is off). */
export interface TwoFaShowResult {
  URI: string;
}

/** GET /api/system/get_config and POST /api/system/set_config. */
export interface ConfigResult {
  success: true;
  config: UserConfig;
}

/** GET /api/auth/check. */
export interface AuthCheckResult {
  user: string;
}
