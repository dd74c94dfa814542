import { afterEach, describe, expect, it, vi } from 'vitest';
import { MemoryRouter, Route, Routes } from 'react-router';
import { envelope, stubFetch } from '../../test/fetch-stub';
import { click, typeInto } from '../../test/dom';
import { flush, render, type Rendered } from '../../test/render';
import { StatusLine } from '../app/FleetApp';
import { useSession } from '../lib/session';
import { SignInPage } from './SignInPage';

const ME = {
  id: 'a1',
  username: 'alice',
  email: 'a@example.com',
  region: 'eu',
  role: 'user',
  totp_enabled: true,
  oidc_issuer: null,
  created_at: 1,
};

let view: Rendered | undefined;
afterEach(() => {
  view?.unmount();
  view = undefined;
  vi.unstubAllGlobals();
  useSession.setState({ me: null });
});

async function show(search = '') {
  window.history.replaceState(null, '', `/signin${search}`);
  view = await render(
    <MemoryRouter initialEntries={[`/signin${search}`]}>
      <StatusLine />
      <Routes>
        <Route path="/signin" element={<SignInPage />} />
        <Route path="/devices" element={<p data-testid="devices-here" />} />
      </Routes>
    </MemoryRouter>,
  );
  await flush();
  return view;
}

describe('SignInPage', () => {
  it('asks for the 2FA code when the fleet says totp_required, then signs in remembering the browser', async () => {
    const { requests } = stubFetch({
      '/cloud-basic/v1/auth/options': () => envelope(200, { signup: true, oidc: null }),
      '/cloud-basic/v1/login': (req) =>
        JSON.parse(req.body ?? '{}').totp
          ? envelope(200, ME)
          : envelope(401, {
              error: 'TotpRequiredError',
              error_msg: 'The 2FA code is required',
              totp_required: true,
            }),
      '/cloud-basic/v1/me': () => envelope(200, ME),
    });
    const v = await show('?code=12345678');
    expect(v.byTestId('signin-totp')).toBeNull();
    expect(v.byTestId('signin-oidc')).toBeNull();
    typeInto(v.byTestId('signin-username'), 'alice');
    typeInto(v.byTestId('signin-password'), 'secret1');
    click(v.byTestId('signin-submit'));
    await flush();
    expect(v.byTestId('status')?.textContent).toMatch(/2FA code/);
    typeInto(v.byTestId('signin-totp'), '123456');
    click(v.byTestId('signin-remember'));
    click(v.byTestId('signin-submit'));
    await flush();
    const logins = requests.filter((r) => r.path.endsWith('/login'));
    expect(logins.map((r) => JSON.parse(r.body ?? '{}'))).toEqual([
      { username: 'alice', password: 'secret1' },
      { username: 'alice', password: 'secret1', totp: '123456', remember: true },
    ]);
    expect(v.byTestId('devices-here')).not.toBeNull();
    expect(useSession.getState().me?.username).toBe('alice');
  });

  it('offers the OpenID Connect provider with ?next= and shows why it failed', async () => {
    stubFetch({
      '/cloud-basic/v1/auth/options': () =>
        envelope(200, { signup: false, oidc: { name: 'Corp SSO' } }),
    });
    const v = await show('?next=%2Fd%2Fdev1%2F&oidc_error=no_account');
    const link = v.byTestId('signin-oidc') as HTMLAnchorElement;
    expect(link.textContent).toBe('Sign in with Corp SSO');
    expect(link.getAttribute('href')).toBe('/cloud-basic/v1/oidc/start?next=%2Fd%2Fdev1%2F');
    expect(v.byTestId('status')?.textContent).toMatch(/no fleet account belongs to this identity/);
    expect(v.byTestId('goto-signup')).toBeNull();
  });
});
