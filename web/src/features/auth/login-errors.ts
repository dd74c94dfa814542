/** SPEC 8 "Login": which message a failed login shows. */
import { ApiError, NetworkError } from '../../lib/api';
import type { I18nKey } from '../../i18n/keys';

export interface LoginErrorMessage {
  key: I18nKey;
  /** Appended after the text of `key` (the server's rate-limit message with its seconds). */
  detail?: string;
}

export function loginErrorMessage(err: unknown, twofaEnabled: boolean): LoginErrorMessage {
  if (err instanceof NetworkError) return { key: 'login.networkError' };
  // 429 is checked before the 2FA rule: "too many attempts, try again in N seconds" is the one
  // thing the user can act on, whether 2FA is on or not.
  if (err instanceof ApiError && err.status === 429) {
    return err.error_msg
      ? { key: 'login.loginFailed', detail: err.error_msg }
      : { key: 'login.loginFailed' };
  }
  if (twofaEnabled) return { key: 'login.pwdOr2FaCodeInvalid' };
  if (err instanceof ApiError && err.status === 403) return { key: 'login.pwdIncorrect' };
  return { key: 'login.loginFailed' };
}
