import { useEffect, useState, type FormEvent } from 'react';
import { Button, Input, theme } from 'antd';
import { useTranslation } from 'react-i18next';
import { useLocation, useNavigate } from 'react-router';
import { useMessage } from '../../components/notify';
import { NetworkError } from '../../lib/api';
import {
  fetchTwoFaState,
  loginWithPassword,
  takeLoginExpiredFlag,
  type TwoFaState,
} from '../session/session-actions';
import { AuthCard } from './AuthCard';
import { Field } from './Field';
import { setPendingPassword } from './pending-login';
import { useFinishLogin, useLoginErrorToast } from './use-finish-login';

/** SPEC 2 /login: the admin password (the user is always 'admin', SPEC 3). */
export default function LoginPage() {
  const { t } = useTranslation();
  const { token } = theme.useToken();
  const message = useMessage();
  const navigate = useNavigate();
  const { search } = useLocation();
  const finishLogin = useFinishLogin();
  const showLoginError = useLoginErrorToast();
  const [password, setPassword] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    if (takeLoginExpiredFlag()) void message.warning(t('login.loginExpired'));
  }, [message, t]);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    if (busy) return;
    if (!password) {
      setError(t('login.passwordRequired'));
      return;
    }
    setError(null);
    setBusy(true);
    let twofa: TwoFaState | null = null;
    try {
      try {
        twofa = await fetchTwoFaState();
      } catch (err) {
        if (err instanceof NetworkError) throw err;
        twofa = null; // Unknown: try the password alone; the server decides.
      }
      if (twofa?.enabled && !twofa.trusted) {
        // 2FA on and this browser not remembered: the code is asked for on /twofactor.
        setPendingPassword(password);
        void navigate({ pathname: '/twofactor', search });
        return;
      }
      finishLogin(await loginWithPassword(password));
    } catch (err) {
      // A remembered browser logs in with the password alone: the 2FA message would mislead.
      showLoginError(err, false);
    } finally {
      setBusy(false);
    }
  };

  return (
    <AuthCard title={t('login.title')}>
      <form onSubmit={(e) => void submit(e)} noValidate>
        <Field id="login-password" label={t('login.password')} error={error}>
          <Input.Password
            id="login-password"
            autoFocus
            autoComplete="current-password"
            value={password}
            status={error ? 'error' : undefined}
            onChange={(e) => {
              setPassword(e.target.value);
              if (error) setError(null);
            }}
            data-testid="login-password"
          />
        </Field>
        <Button type="primary" htmlType="submit" block loading={busy} data-testid="login-submit">
          {t('login.submit')}
        </Button>
      </form>
      <p style={{ color: token.colorTextSecondary, margin: `${token.marginMD}px 0 0` }}>
        {t('login.forgotPassword')}
      </p>
    </AuthCard>
  );
}
