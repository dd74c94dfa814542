/**
 * Sign up (part 1's flow, SPEC 5): the e-mail code (`POST signup/email-code`), then
 * `POST signup`; the fleet's field refusals (`fields`) shown under their fields.
 */
import { useState, type FormEvent } from 'react';
import { Button, Input } from 'antd';
import { Link, useNavigate } from 'react-router';
import { CLOUD_REGIONS } from '@kvm/protocol/cloud';
import { useT, type FleetKey } from '../i18n';
import { ApiError, api } from '../lib/api';
import { showError, showStatus } from '../lib/session';

type Field = 'username' | 'email' | 'email_code' | 'password' | 'password2' | 'region' | 'privacy';

/** SPEC 5's field errors (CloudFieldError) and the fleet's own (`username_taken`, `email_taken`). */
export function fieldErrorKey(code: string): FleetKey | null {
  const known: Record<string, FleetKey> = {
    username_required: 'fieldError.username_required',
    username_invalid: 'fieldError.username_invalid',
    username_taken: 'fieldError.username_taken',
    email_invalid: 'fieldError.email_invalid',
    email_taken: 'fieldError.email_taken',
    email_code_invalid: 'fieldError.email_code_invalid',
    privacy_required: 'fieldError.privacy_required',
    password_required: 'fieldError.password_required',
    password_length: 'fieldError.password_length',
    password_mismatch: 'fieldError.password_mismatch',
    region_required: 'fieldError.region_required',
  };
  return known[code] ?? null;
}

export default function SignUpPage() {
  const t = useT();
  const navigate = useNavigate();
  const [f, setF] = useState({
    username: '',
    email: '',
    email_code: '',
    password: '',
    password2: '',
    region: '',
    privacy: false,
  });
  const [errors, setErrors] = useState<Partial<Record<Field, string>>>({});
  const [busy, setBusy] = useState(false);
  const set = (k: Field, v: string | boolean) => setF((old) => ({ ...old, [k]: v }));

  const refused = (e: unknown) => {
    const fields = e instanceof ApiError ? (e.details.fields as Record<string, string>) : null;
    const out: Partial<Record<Field, string>> = {};
    for (const [k, code] of Object.entries(fields ?? {})) {
      const key = fieldErrorKey(code);
      out[k as Field] = key ? t(key) : code;
    }
    setErrors(out);
    showError(e);
  };

  const sendCode = async () => {
    setErrors({});
    try {
      await api.post('signup/email-code', { email: f.email });
      showStatus(t('signup.codeSent', { email: f.email }));
    } catch (e) {
      refused(e);
    }
  };

  const submit = async (ev: FormEvent) => {
    ev.preventDefault();
    setErrors({});
    setBusy(true);
    try {
      await api.post('signup', f);
      showStatus(t('signup.done'));
      void navigate(`/signin${location.search}`, { state: { username: f.username } });
    } catch (e) {
      refused(e);
    } finally {
      setBusy(false);
    }
  };

  const err = (k: Field, id: string) => (
    <span className="fleet-err" id={`su-${k}-err`} data-testid={id}>
      {errors[k] ?? ''}
    </span>
  );
  const text = (k: Field, id: string, label: FleetKey, type = 'text', max?: number) => (
    <>
      <label htmlFor={`su-${k}`}>{t(label)}</label>
      <Input
        id={`su-${k}`}
        type={type}
        maxLength={max}
        value={f[k] as string}
        onChange={(e) => set(k, e.target.value)}
        aria-describedby={`su-${k}-err`}
        data-testid={id}
      />
    </>
  );

  return (
    <section data-testid="view-signup">
      <h2>{t('signup.title')}</h2>
      <form className="fleet-form" onSubmit={(e) => void submit(e)} noValidate>
        {text('username', 'signup-username', 'field.username', 'text', 15)}
        {err('username', 'signup-username-error')}
        {text('email', 'signup-email', 'field.email', 'email')}
        {err('email', 'signup-email-error')}
        <Button onClick={() => void sendCode()} data-testid="signup-send-code">
          {t('signup.sendCode')}
        </Button>
        {text('email_code', 'signup-code', 'field.emailCode', 'text', 6)}
        {err('email_code', 'signup-code-error')}
        {text('password', 'signup-password', 'field.newPassword', 'password', 10)}
        {err('password', 'signup-password-error')}
        {text('password2', 'signup-password2', 'field.password2', 'password', 10)}
        {err('password2', 'signup-password2-error')}
        <label htmlFor="su-region">{t('field.region')}</label>
        <select
          id="su-region"
          className="fleet-select"
          value={f.region}
          onChange={(e) => set('region', e.target.value)}
          data-testid="signup-region"
        >
          <option value="">{t('common.choose')}</option>
          {CLOUD_REGIONS.map((r) => (
            <option key={r} value={r}>
              {r === 'asia' ? 'Asia' : r.toUpperCase()}
            </option>
          ))}
        </select>
        {err('region', 'signup-region-error')}
        <label className="fleet-check">
          <input
            type="checkbox"
            checked={f.privacy}
            onChange={(e) => set('privacy', e.target.checked)}
            data-testid="signup-privacy"
          />
          {t('signup.privacy')}
        </label>
        {err('privacy', 'signup-privacy-error')}
        <Button type="primary" htmlType="submit" loading={busy} data-testid="signup-submit">
          {t('signup.submit')}
        </Button>
      </form>
      <p>
        {t('signup.haveAccount')}{' '}
        <Link to={`/signin${location.search}`} data-testid="goto-signin">
          {t('signin.title')}
        </Link>
      </p>
    </section>
  );
}
