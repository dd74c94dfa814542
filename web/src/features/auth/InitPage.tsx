import { useState, type FormEvent } from 'react';
import { Button, Input } from 'antd';
import { useTranslation } from 'react-i18next';
import { useLocation, useNavigate } from 'react-router';
import { useMessage } from '../../components/notify';
import { api, errorMessage } from '../../lib/api';
import { loginWithPassword } from '../session/session-actions';
import { useSession } from '../session/session-store';
import { AuthCard } from './AuthCard';
import { Field } from './Field';
import { confirmError, passwordError } from './password-rules';
import { useFinishLogin } from './use-finish-login';

/** SPEC 2 /init: first-time setup of the admin password, then automatic login (SPEC 4). */
export default function InitPage() {
  const { t } = useTranslation();
  const message = useMessage();
  const navigate = useNavigate();
  const { search } = useLocation();
  const finishLogin = useFinishLogin();
  const [password, setPassword] = useState('');
  const [confirm, setConfirm] = useState('');
  const [errors, setErrors] = useState<{ password?: string; confirm?: string }>({});
  const [busy, setBusy] = useState(false);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    if (busy) return;
    const passwordKey = passwordError(password);
    const confirmKey = confirmError(password, confirm);
    if (passwordKey || confirmKey) {
      setErrors({
        ...(passwordKey ? { password: t(passwordKey) } : {}),
        ...(confirmKey ? { confirm: t(confirmKey) } : {}),
      });
      return;
    }
    setErrors({});
    setBusy(true);
    try {
      await api.get('/init/init', { query: { password } });
    } catch (err) {
      void message.error(errorMessage(err, t('init.initFailed')));
      setBusy(false);
      return;
    }
    try {
      // Log in before marking the device initialised: the guard would otherwise move on to '/'
      // and check a login that does not exist yet.
      const result = await loginWithPassword(password);
      useSession.setState({ isInited: true });
      finishLogin(result);
    } catch {
      useSession.setState({ isInited: true });
      void navigate({ pathname: '/login', search }, { replace: true });
    } finally {
      setBusy(false);
    }
  };

  return (
    <AuthCard title={t('init.title')} description={t('init.description')}>
      <form onSubmit={(e) => void submit(e)} noValidate>
        <Field id="init-password" label={t('init.password')} error={errors.password}>
          <Input.Password
            id="init-password"
            autoFocus
            autoComplete="new-password"
            value={password}
            status={errors.password ? 'error' : undefined}
            onChange={(e) => setPassword(e.target.value)}
            data-testid="init-password"
          />
        </Field>
        <Field id="init-confirm" label={t('init.confirmPassword')} error={errors.confirm}>
          <Input.Password
            id="init-confirm"
            autoComplete="new-password"
            value={confirm}
            status={errors.confirm ? 'error' : undefined}
            onChange={(e) => setConfirm(e.target.value)}
            data-testid="init-confirm"
          />
        </Field>
        <Button type="primary" htmlType="submit" block loading={busy} data-testid="init-submit">
          {t('init.submit')}
        </Button>
      </form>
    </AuthCard>
  );
}
