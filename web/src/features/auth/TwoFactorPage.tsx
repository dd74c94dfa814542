import { useState, type FormEvent } from 'react';
import { Button, Checkbox, Input } from 'antd';
import { useTranslation } from 'react-i18next';
import { Navigate, useLocation, useNavigate } from 'react-router';
import { loginWithTwoFa } from '../session/session-actions';
import { AuthCard } from './AuthCard';
import { Field } from './Field';
import { clearPendingPassword, getPendingPassword } from './pending-login';
import { twoFaCodeError } from './twofa-code';
import { useFinishLogin, useLoginErrorToast } from './use-finish-login';
import { rememberUsedCode, wasCodeJustUsed } from './dynamic-code';

/** SPEC 2 /twofactor: the 6-digit code for the password typed on /login. */
export default function TwoFactorPage() {
  const { t } = useTranslation();
  const navigate = useNavigate();
  const { search } = useLocation();
  const finishLogin = useFinishLogin();
  const showLoginError = useLoginErrorToast();
  const [password] = useState(getPendingPassword);
  const [code, setCode] = useState('');
  const [remember, setRemember] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  // Reached without the password step (reload, bookmark): back to /login.
  if (password === null) return <Navigate to={{ pathname: '/login', search }} replace />;

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    if (busy) return;
    const invalid = twoFaCodeError(code);
    if (invalid) {
      setError(t(invalid));
      return;
    }
    // The server would refuse it as used (and count it towards the lock): not sent.
    if (wasCodeJustUsed(code)) {
      setError(t('twofa.codeUsed'));
      return;
    }
    setError(null);
    setBusy(true);
    try {
      const result = await loginWithTwoFa(password, code, remember);
      rememberUsedCode(code);
      finishLogin(result);
    } catch (err) {
      showLoginError(err, true);
    } finally {
      setBusy(false);
    }
  };

  const backToLogin = () => {
    clearPendingPassword();
    void navigate({ pathname: '/login', search }, { replace: true });
  };

  return (
    <AuthCard title={t('twofa.title')} description={t('twofa.description')}>
      <form onSubmit={(e) => void submit(e)} noValidate>
        <Field id="twofa-code" label={t('twofa.code')} error={error}>
          <Input
            id="twofa-code"
            autoFocus
            inputMode="numeric"
            autoComplete="one-time-code"
            maxLength={6}
            value={code}
            status={error ? 'error' : undefined}
            onChange={(e) => {
              setCode(e.target.value.trim());
              if (error) setError(null);
            }}
            data-testid="twofa-code"
          />
        </Field>
        <div style={{ marginBottom: 16 }}>
          <Checkbox
            checked={remember}
            onChange={(e) => setRemember(e.target.checked)}
            data-testid="twofa-remember"
          >
            {t('twofa.remember')}
          </Checkbox>
        </div>
        <Button type="primary" htmlType="submit" block loading={busy} data-testid="twofa-submit">
          {t('twofa.submit')}
        </Button>
        <Button type="link" block onClick={backToLogin} style={{ marginTop: 8 }}>
          {t('twofa.backToLogin')}
        </Button>
      </form>
    </AuthCard>
  );
}
