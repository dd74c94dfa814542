/**
 * Sign in (`POST login`): the 2FA code and "remember this browser" when the fleet answers
 * totp_required; "Sign in with <provider>" when `GET auth/options` has OpenID Connect (a link to
 * `oidc/start?next=`), its `?oidc_error=` shown. Then `?next=` (safeNext) or the devices, with a
 * bind link's `?code=` kept.
 */
import { useEffect, useState, type FormEvent } from 'react';
import { Button, Input } from 'antd';
import { Link, useLocation, useNavigate } from 'react-router';
import type { FleetAuthOptions, FleetMe } from '@kvm/protocol/fleet';
import { useT } from '../i18n';
import { ApiError, api, fleetUrl } from '../lib/api';
import { safeNext } from '../lib/links';
import { showError, showStatus, useSession } from '../lib/session';

/** The fleet's `oidc_error` codes (fleet/src/oidc/oidc.ts OidcErrorCode). */
const OIDC_ERRORS = [
  'unavailable',
  'rate_limited',
  'state',
  'denied',
  'provider',
  'no_account',
  'disabled',
  'email_taken',
] as const;
type OidcErrorCode = (typeof OIDC_ERRORS)[number];

export function SignInPage() {
  const t = useT();
  const navigate = useNavigate();
  // after signing up: the new account's name (SignUpPage passes it)
  const signedUp = (useLocation().state as { username?: string } | null)?.username;
  const [username, setUsername] = useState(signedUp ?? '');
  const [password, setPassword] = useState('');
  const [totp, setTotp] = useState('');
  const [remember, setRemember] = useState(false);
  const [askTotp, setAskTotp] = useState(false);
  const [busy, setBusy] = useState(false);
  const [options, setOptions] = useState<FleetAuthOptions | null>(null);

  useEffect(() => {
    api.get<FleetAuthOptions>('auth/options').then(setOptions, () => setOptions(null));
    const oidcError = new URLSearchParams(location.search).get('oidc_error');
    if (oidcError) {
      const known = (OIDC_ERRORS as readonly string[]).includes(oidcError);
      const why = known ? t(`oidcError.${oidcError as OidcErrorCode}`) : oidcError;
      showStatus(t('signin.oidcError', { error: why }), true);
    }
  }, [t]);

  const submit = async (ev: FormEvent) => {
    ev.preventDefault();
    setBusy(true);
    try {
      const body: Record<string, unknown> = { username, password };
      if (askTotp && totp) {
        body.totp = totp;
        body.remember = remember;
      }
      await api.post<FleetMe>('login', body);
      // `GET me` is the whole FleetMe (role, id)
      const me = await api.get<FleetMe>('me');
      const next = safeNext(location.search);
      if (next) {
        location.assign(next);
        return;
      }
      showStatus('');
      useSession.setState({ me });
      void navigate(`/devices${location.search}`, { replace: true });
    } catch (e) {
      if (e instanceof ApiError && e.details.totp_required) {
        setAskTotp(true);
        showStatus(t('signin.totpNeeded'));
      } else showError(e);
    } finally {
      setBusy(false);
    }
  };

  const next = safeNext(location.search);
  return (
    <section data-testid="view-signin">
      <h2>{t('signin.title')}</h2>
      <form className="fleet-form" onSubmit={(e) => void submit(e)} noValidate>
        <label htmlFor="si-username">{t('field.username')}</label>
        <Input
          id="si-username"
          autoComplete="username"
          value={username}
          onChange={(e) => setUsername(e.target.value)}
          data-testid="signin-username"
        />
        <label htmlFor="si-password">{t('field.password')}</label>
        <Input
          id="si-password"
          type="password"
          autoComplete="current-password"
          value={password}
          onChange={(e) => setPassword(e.target.value)}
          data-testid="signin-password"
        />
        {askTotp && (
          <>
            <label htmlFor="si-totp">{t('field.totp')}</label>
            <Input
              id="si-totp"
              inputMode="numeric"
              autoComplete="one-time-code"
              maxLength={6}
              autoFocus
              value={totp}
              onChange={(e) => setTotp(e.target.value)}
              data-testid="signin-totp"
            />
            <label className="fleet-check">
              <input
                type="checkbox"
                checked={remember}
                onChange={(e) => setRemember(e.target.checked)}
                data-testid="signin-remember"
              />
              {t('signin.remember')}
            </label>
          </>
        )}
        <Button type="primary" htmlType="submit" loading={busy} data-testid="signin-submit">
          {t('signin.submit')}
        </Button>
      </form>
      {options?.oidc && (
        <p>
          <a
            className="ant-btn ant-btn-default"
            href={fleetUrl('oidc/start', { next: next ?? undefined })}
            data-testid="signin-oidc"
          >
            {t('signin.oidc', { name: options.oidc.name })}
          </a>
        </p>
      )}
      {options?.signup !== false && (
        <p>
          {t('signin.noAccount')}{' '}
          <Link to={`/signup${location.search}`} data-testid="goto-signup">
            {t('signup.title')}
          </Link>
        </p>
      )}
    </section>
  );
}
