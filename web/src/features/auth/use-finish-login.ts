import { useCallback } from 'react';
import { useTranslation } from 'react-i18next';
import { useLocation, useNavigate } from 'react-router';
import type { LoginResult } from '@kvm/protocol/api';
import { completeLogin } from '../session/session-actions';
import { clearPendingPassword } from './pending-login';
import { loginErrorMessage } from './login-errors';
import { useMessage } from '../../components/notify';

/** SPEC 4: after a successful login, toast, then '/' with the query kept. */
export function useFinishLogin() {
  const message = useMessage();
  const { t } = useTranslation();
  const navigate = useNavigate();
  const { search } = useLocation();
  return useCallback(
    (result: Partial<LoginResult>) => {
      clearPendingPassword();
      completeLogin(result);
      void message.success(t('login.loginSuccess'));
      void navigate({ pathname: '/', search }, { replace: true });
    },
    [message, navigate, search, t],
  );
}

/** SPEC 8: the toast of a failed login. */
export function useLoginErrorToast() {
  const message = useMessage();
  const { t } = useTranslation();
  return useCallback(
    (err: unknown, twofaEnabled: boolean) => {
      const { key, detail } = loginErrorMessage(err, twofaEnabled);
      void message.error(detail ? `${t(key)} ${detail}` : t(key));
    },
    [message, t],
  );
}
