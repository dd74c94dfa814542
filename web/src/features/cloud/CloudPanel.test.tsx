import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { act } from 'react';
import type { CloudServerProbe, CloudStatus } from '@kvm/protocol/cloud';
import { STORAGE_KEYS } from '@kvm/protocol/constants';
import en from '../../i18n/en.json';
import { click, typeInto } from '../../test/dom';
import { envelope, stubFetch, type RecordedRequest, type Responder } from '../../test/fetch-stub';
import { flush, renderPanel, type Rendered } from '../../test/render';
import { useSession } from '../session/session-store';
import { chooseOption } from '../system/test-utils';
import { applyCloudStatus, resetCloudForTests, useCloud } from './cloud-store';
import CloudPanel from './CloudPanel';

const FP = 'AB:'.repeat(31) + 'AB';

function status(patch: Partial<CloudStatus> = {}): CloudStatus {
  return {
    enabled: true,
    bound: false,
    state: 'unbound',
    url: 'https://fleet.test',
    pinned: null,
    device: { id: null, mac: '02:00:00:00:00:01', serial: 'SN0001' },
    account: null,
    bound_at: null,
    replica: null,
    error: null,
    ...patch,
  };
}

const BOUND = status({
  bound: true,
  state: 'online',
  device: { id: 'dev-123', mac: '02:00:00:00:00:01', serial: 'SN0001' },
  account: { username: 'alice', email: 'alice@example.com' },
  bound_at: 1_800_000_000,
  replica: 'a',
});

let view: Rendered | undefined;
let requests: RecordedRequest[];
let device: CloudStatus;
const routes: Record<string, Responder> = {};

const body = (path: string): unknown => {
  const req = requests.filter((r) => r.path === path).at(-1);
  return req?.body ? (JSON.parse(req.body) as unknown) : undefined;
};
const text = (id: string) => view?.byTestId(id)?.textContent ?? null;
/** A form field's current message ('' when none). */
const err = (id: string) => view?.byTestId(`${id}-field`)?.dataset['error'] ?? null;

/** Polls with a time limit: a loaded machine takes seconds where an idle one takes ticks. */
async function waitFor(check: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (check()) return;
    await flush(1);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`timed out waiting for ${what}`);
}

async function submit(testId: string): Promise<void> {
  const button = view?.byTestId(testId);
  if (!button) throw new Error(`no ${testId}`);
  await act(async () => button.click());
  await flush();
}

async function open(initial: CloudStatus): Promise<Rendered> {
  device = initial;
  view = await renderPanel(<CloudPanel />);
  await waitFor(() => view?.byTestId('cloud-state') !== null, 'the panel');
  return view;
}

beforeEach(() => {
  localStorage.clear();
  resetCloudForTests();
  useSession.setState({ twofaEnabled: false });
  for (const key of Object.keys(routes)) delete routes[key];
  routes['/api/cloud/status'] = () => envelope(200, device);
  ({ requests } = stubFetch(routes));
});

afterEach(() => {
  view?.unmount();
  view = undefined;
  resetCloudForTests();
  vi.unstubAllGlobals();
  vi.useRealTimers();
  document.body.innerHTML = '';
});

describe('CloudPanel: states and the switch', () => {
  it('disabled: says so plainly, and turns on only after the confirmation', async () => {
    routes['/api/cloud/enable'] = (req) => {
      const { enable } = JSON.parse(req.body ?? '{}') as { enable: boolean };
      device = status({ enabled: enable, state: enable ? 'unbound' : 'disabled', url: null });
      return envelope(200, device);
    };
    const v = await open(status({ enabled: false, state: 'disabled', url: null }));
    expect(v.byTestId('cloud-state')?.dataset['state']).toBe('disabled');
    expect(text('cloud-state')).toBe(en.cloud.state.disabled);
    expect(text('cloud-disabled')).toBe(en.cloud.disabledHint);
    expect(v.byTestId('cloud-server')).toBeNull();
    // SPEC 4's binding info is there, unbound.
    expect(text('cloud-info')).toContain('02:00:00:00:00:01');
    expect(text('cloud-info')).toContain('SN0001');
    expect(text('cloud-bound')).toBe(en.cloud.unbound);

    click(v.byTestId('cloud-enable'));
    await flush();
    expect(text('cloud-enable-confirm')).toBe(en.cloud.enableConfirm);
    expect(requests.some((r) => r.path === '/api/cloud/enable')).toBe(false);
    await submit('confirm-ok');
    await waitFor(() => v.byTestId('cloud-server') !== null, 'the server section');
    expect(body('/api/cloud/enable')).toEqual({ enable: true });
    expect(v.byTestId('cloud-state')?.dataset['state']).toBe('unbound');
  });

  it('shows every state the device reports, with the error and the revoked hint', async () => {
    const v = await open(status());
    for (const state of ['connecting', 'online', 'offline', 'revoked', 'unbound'] as const) {
      act(() =>
        applyCloudStatus(
          state === 'revoked' || state === 'unbound'
            ? status({ state })
            : { ...BOUND, state, error: state === 'offline' ? 'connect ECONNREFUSED' : null },
        ),
      );
      expect(v.byTestId('cloud-state')?.dataset['state']).toBe(state);
      expect(text('cloud-state')).toBe(en.cloud.state[state]);
    }
    act(() => applyCloudStatus({ ...BOUND, state: 'offline', error: 'connect ECONNREFUSED' }));
    expect(text('cloud-error')).toBe(`${en.cloud.info.error}: connect ECONNREFUSED`);
    act(() => applyCloudStatus(status({ state: 'revoked' })));
    expect(text('cloud-revoked')).toBe(en.cloud.revokedHint);
    expect(v.byTestId('cloud-error')).toBeNull();
  });

  it('a failed read says so', async () => {
    routes['/api/cloud/status'] = () =>
      envelope(500, { error: 'InternalError', error_msg: 'boom' });
    view = await renderPanel(<CloudPanel />);
    await waitFor(() => view?.byTestId('cloud-load-error') !== null, 'the error');
    expect(text('cloud-load-error')).toBe(`${en.cloud.loadFailed}: boom`);
  });
});

describe('CloudPanel: the fleet server and its certificate', () => {
  it('an untrusted certificate is pinned only by the explicit trust step', async () => {
    const probe: CloudServerProbe = {
      url: 'https://fleet.test:8443',
      trusted: false,
      fingerprint: FP,
      subject: 'CN=fleet.test',
      issuer: 'CN=fleet.test',
      valid_to: 'Jan  1 00:00:00 2030 GMT',
    };
    routes['/api/cloud/server'] = () => {
      device = status({ url: 'https://fleet.test:8443' });
      return envelope(200, probe);
    };
    routes['/api/cloud/trust'] = () => {
      device = status({ url: 'https://fleet.test:8443', pinned: FP });
      return envelope(200, device);
    };
    const v = await open(status({ url: null }));
    expect(v.byTestId('cloud-bind')).toBeNull();
    await submit('cloud-server-connect');
    expect(v.byTestId('cloud-server')?.textContent).toContain(en.cloud.server.required);
    typeInto(v.byTestId('cloud-server-url'), ' https://fleet.test:8443 ');
    await submit('cloud-server-connect');
    await waitFor(() => v.byTestId('cloud-server-trust') !== null, 'the trust step');
    expect(body('/api/cloud/server')).toEqual({ url: 'https://fleet.test:8443' });
    expect(text('cloud-server-untrusted')).toContain('CN=fleet.test');
    expect(text('cloud-server-trust')).toBe(`Trust this certificate (SHA-256 ${FP})`);
    expect(requests.some((r) => r.path === '/api/cloud/trust')).toBe(false);
    await submit('cloud-server-trust');
    await waitFor(() => v.byTestId('cloud-server-pinned') !== null, 'the pin');
    expect(body('/api/cloud/trust')).toEqual({ fingerprint: FP });
    expect(v.byTestId('cloud-server-trust')).toBeNull();
    expect(text('cloud-server-pinned')).toBe(`Pinned certificate: SHA-256 ${FP}`);
    // With a server set, the device can be bound.
    expect(v.byTestId('cloud-bind')).not.toBeNull();
  });

  it('an unreachable fleet: the device says why', async () => {
    routes['/api/cloud/server'] = () =>
      envelope(502, { error: 'CloudUnreachableError', error_msg: 'connect ECONNREFUSED' });
    const v = await open(status({ url: null }));
    typeInto(v.byTestId('cloud-server-url'), 'https://nowhere.test');
    await submit('cloud-server-connect');
    await waitFor(() => v.byTestId('cloud-server-error') !== null, 'the error');
    expect(text('cloud-server-error')).toBe(`${en.cloud.server.failed}: connect ECONNREFUSED`);
  });
});

describe('CloudPanel: bind by code', () => {
  it('shows the 8-digit code with its 60 s, waits for the binding, renews on request', async () => {
    let n = 0;
    routes['/api/cloud/bind/code'] = () => {
      n += 1;
      return envelope(200, { code: n === 1 ? '12345678' : '87654321', expires_in: 60 });
    };
    const v = await open(status());
    expect(v.byTestId('cloud-code')).toBeNull();
    await submit('cloud-code-get');
    await waitFor(() => v.byTestId('cloud-code') !== null, 'the code');
    expect(text('cloud-code')).toContain('12345678');
    const seconds = Number(v.byTestId('cloud-code-expiry')?.dataset['seconds']);
    expect(seconds).toBeGreaterThanOrEqual(59);
    expect(seconds).toBeLessThanOrEqual(60);
    expect(text('cloud-code-expiry')).toBe(`Valid for ${seconds} s`);
    expect(v.byTestId('cloud-code-waiting')).not.toBeNull();
    // SPEC 3's keys: the code shown, and until when the panel polls.
    const stored = JSON.parse(localStorage.getItem(STORAGE_KEYS.dynamicCode) ?? '{}') as {
      bind_code?: string;
      expires_at?: number;
    };
    expect(stored.bind_code).toBe('12345678');
    expect(Number(localStorage.getItem(STORAGE_KEYS.cloudBindStatusPolling))).toBe(
      stored.expires_at,
    );

    await submit('cloud-code-get');
    await waitFor(() => text('cloud-code')?.includes('87654321') === true, 'the new code');

    // The fleet's account claims it: the `cloud` event says bound; the wait ends.
    act(() => applyCloudStatus(BOUND));
    expect(v.byTestId('cloud-bind')).toBeNull();
    expect(text('cloud-account')).toBe('alice (alice@example.com)');
    expect(text('cloud-info')).toContain('dev-123');
    expect(useCloud.getState().polling).toBe(false);
    expect(localStorage.getItem(STORAGE_KEYS.dynamicCode)).toBeNull();
    expect(localStorage.getItem(STORAGE_KEYS.cloudBindStatusPolling)).toBeNull();
  });

  it('the panel opened again shows the same code, still counting down', async () => {
    localStorage.setItem(
      STORAGE_KEYS.dynamicCode,
      JSON.stringify({ bind_code: '24682468', expires_at: Date.now() + 30_000 }),
    );
    localStorage.setItem(STORAGE_KEYS.cloudBindStatusPolling, String(Date.now() + 30_000));
    const v = await open(status());
    await waitFor(() => v.byTestId('cloud-code') !== null, 'the code');
    expect(text('cloud-code')).toContain('24682468');
    expect(Number(v.byTestId('cloud-code-expiry')?.dataset['seconds'])).toBeLessThanOrEqual(30);
    expect(useCloud.getState().polling).toBe(true);
    expect(requests.some((r) => r.path === '/api/cloud/bind/code')).toBe(false);
  });

  it('a refusal shows the device’s reason', async () => {
    routes['/api/cloud/bind/code'] = () =>
      envelope(409, {
        error: 'CloudDisabledError',
        error_msg: 'The cloud is disabled: enable it first',
      });
    const v = await open(status());
    await submit('cloud-code-get');
    await waitFor(() => v.byTestId('cloud-code-error') !== null, 'the error');
    expect(text('cloud-code-error')).toBe(
      `${en.cloud.bind.codeFailed}: The cloud is disabled: enable it first`,
    );
  });
});

describe('CloudPanel: cloud account (SPEC 5)', () => {
  async function accountTab(): Promise<Rendered> {
    const v = await open(status());
    click(v.byTestId('cloud-tab-account'));
    await waitFor(() => v.byTestId('cloud-login') !== null, 'the login form');
    return v;
  }

  it('login: username, password 6-10 and region are checked before any call', async () => {
    const v = await accountTab();
    await submit('cloud-login-submit');
    expect(err('cloud-username')).toBe(en.cloud.errors.username_required);
    expect(err('cloud-password')).toBe(en.cloud.errors.password_required);
    expect(err('cloud-region')).toBe(en.cloud.errors.region_required);
    typeInto(v.byTestId('cloud-username'), 'alice');
    typeInto(v.byTestId('cloud-password'), '12345');
    await submit('cloud-login-submit');
    expect(err('cloud-password')).toBe(en.cloud.errors.password_length);
    expect(err('cloud-username')).toBe('');
    expect(requests.some((r) => r.path === '/api/cloud/bind/login')).toBe(false);
  });

  it('login: asks for the account’s 2FA code when the fleet wants it, then binds', async () => {
    routes['/api/cloud/bind/login'] = (req) => {
      const form = JSON.parse(req.body ?? '{}') as { totp?: string };
      if (!form.totp) {
        return envelope(403, {
          error: 'CloudForbiddenError',
          error_msg: 'The fleet refused: This account asks for a 2FA code',
        });
      }
      device = BOUND;
      return envelope(200, device);
    };
    const v = await accountTab();
    typeInto(v.byTestId('cloud-username'), 'alice');
    typeInto(v.byTestId('cloud-password'), 'secret1');
    await chooseOption(v, 'cloud-region', en.cloud.region.eu);
    expect(v.byTestId('cloud-totp')).toBeNull();
    await submit('cloud-login-submit');
    await waitFor(() => v.byTestId('cloud-totp') !== null, 'the 2FA field');
    expect(v.byTestId('cloud-account-error')).toBeNull();
    expect(body('/api/cloud/bind/login')).toEqual({
      username: 'alice',
      password: 'secret1',
      region: 'eu',
    });
    typeInto(v.byTestId('cloud-totp'), '12');
    await submit('cloud-login-submit');
    expect(err('cloud-totp')).toBe(en.twofa.codeRequired);
    typeInto(v.byTestId('cloud-totp'), '123456');
    await submit('cloud-login-submit');
    await waitFor(() => v.byTestId('cloud-bind') === null, 'the binding');
    expect(body('/api/cloud/bind/login')).toEqual({
      username: 'alice',
      password: 'secret1',
      region: 'eu',
      totp: '123456',
    });
    expect(text('cloud-account')).toBe('alice (alice@example.com)');
  });

  it('login: a wrong password shows the fleet’s reason', async () => {
    routes['/api/cloud/bind/login'] = () =>
      envelope(403, {
        error: 'CloudForbiddenError',
        error_msg: 'The fleet refused: Invalid username or password',
      });
    const v = await accountTab();
    typeInto(v.byTestId('cloud-username'), 'alice');
    typeInto(v.byTestId('cloud-password'), 'secret1');
    await chooseOption(v, 'cloud-region', en.cloud.region.us);
    await submit('cloud-login-submit');
    await waitFor(() => v.byTestId('cloud-account-error') !== null, 'the error');
    expect(text('cloud-account-error')).toBe(
      `${en.cloud.login.failed}: The fleet refused: Invalid username or password`,
    );
    expect(v.byTestId('cloud-totp')).toBeNull();
  });

  it('sign-up: SPEC 5 rules and messages, word for word where SPEC gives them', async () => {
    const v = await accountTab();
    click(v.byTestId('cloud-to-signup'));
    await waitFor(() => v.byTestId('cloud-signup') !== null, 'the sign-up form');
    await submit('cloud-signup-submit');
    expect(err('cloud-username')).toBe(en.cloud.errors.username_required);
    expect(err('cloud-email')).toBe('The email address format is not valid.');
    expect(err('cloud-email-code')).toBe(en.cloud.errors.email_code_invalid);
    expect(err('cloud-password')).toBe(en.cloud.errors.password_required);
    expect(err('cloud-privacy')).toBe(en.cloud.errors.privacy_required);
    expect(err('cloud-region')).toBe(en.cloud.errors.region_required);

    for (const bad of ['abcd', '_alice', 'alice!']) {
      typeInto(v.byTestId('cloud-username'), bad);
      await submit('cloud-signup-submit');
      expect(err('cloud-username'), bad).toBe(en.cloud.errors.username_invalid);
    }
    typeInto(v.byTestId('cloud-username'), 'a.b_c-1');
    typeInto(v.byTestId('cloud-email'), 'alice@example');
    typeInto(v.byTestId('cloud-email-code'), '12345');
    typeInto(v.byTestId('cloud-password'), 'secret1');
    typeInto(v.byTestId('cloud-password2'), 'secret2');
    await submit('cloud-signup-submit');
    expect(err('cloud-username')).toBe('');
    expect(err('cloud-email')).toBe('The email address format is not valid.');
    expect(err('cloud-email-code')).toBe(en.cloud.errors.email_code_invalid);
    expect(err('cloud-password2')).toBe(en.cloud.errors.password_mismatch);
    expect(en.cloud.errors.password_mismatch).toBe('Entered passwords differ');
    expect(requests.some((r) => r.path.startsWith('/api/cloud/signup'))).toBe(false);
  });

  it('sign-up: the e-mail code with a resend cooldown, then the account binds the device', async () => {
    routes['/api/cloud/signup/email-code'] = () => envelope(200, {});
    routes['/api/cloud/signup'] = () => {
      device = { ...BOUND, account: { username: 'newbie', email: 'new@example.com' } };
      return envelope(200, device);
    };
    const v = await accountTab();
    click(v.byTestId('cloud-to-signup'));
    await waitFor(() => v.byTestId('cloud-signup') !== null, 'the sign-up form');
    typeInto(v.byTestId('cloud-email'), 'not-an-address');
    await submit('cloud-email-send');
    expect(err('cloud-email')).toBe('The email address format is not valid.');
    expect(requests.some((r) => r.path === '/api/cloud/signup/email-code')).toBe(false);

    typeInto(v.byTestId('cloud-email'), 'new@example.com');
    await submit('cloud-email-send');
    await waitFor(() => text('cloud-email-send')?.startsWith('Resend in') === true, 'the cooldown');
    expect(body('/api/cloud/signup/email-code')).toEqual({ email: 'new@example.com' });
    expect((v.byTestId('cloud-email-send') as HTMLButtonElement).disabled).toBe(true);

    typeInto(v.byTestId('cloud-username'), 'newbie');
    typeInto(v.byTestId('cloud-email-code'), '654321');
    typeInto(v.byTestId('cloud-password'), 'secret1');
    typeInto(v.byTestId('cloud-password2'), 'secret1');
    await chooseOption(v, 'cloud-region', en.cloud.region.asia);
    const privacy = v.byTestId('cloud-privacy');
    click(privacy instanceof HTMLInputElement ? privacy : privacy?.querySelector('input'));
    await submit('cloud-signup-submit');
    await waitFor(() => v.byTestId('cloud-bind') === null, 'the binding');
    expect(body('/api/cloud/signup')).toEqual({
      username: 'newbie',
      email: 'new@example.com',
      email_code: '654321',
      password: 'secret1',
      password2: 'secret1',
      privacy: true,
      region: 'asia',
    });
    expect(text('cloud-account')).toBe('newbie (new@example.com)');
  });

  it('region and account login appear only in the cloud-account tab (SPEC 6)', async () => {
    const v = await open(status());
    expect(v.byTestId('cloud-bind-code')).not.toBeNull();
    expect(v.byTestId('cloud-region')).toBeNull();
    expect(v.byTestId('cloud-login')).toBeNull();
  });
});

describe('CloudPanel: unbind (SPEC 4, 8)', () => {
  it('needs the admin password and, with 2FA on, the code; a wrong one says "unbind failed"', async () => {
    routes['/api/2fa/is_enabled'] = () => envelope(200, { enabled: true });
    routes['/api/cloud/unbind'] = (req) => {
      const form = JSON.parse(req.body ?? '{}') as { passwd?: string; code?: string };
      if (form.passwd !== 'admin-pass' || form.code !== '246810') {
        return envelope(403, { error: 'CloudUnbindFailedError', error_msg: 'unbind failed' });
      }
      device = status({ device: { id: null, mac: '02:00:00:00:00:01', serial: 'SN0001' } });
      return envelope(200, device);
    };
    const v = await open(BOUND);
    expect(text('cloud-bound')).toBe(en.cloud.bound);
    click(v.byTestId('cloud-unbind'));
    await waitFor(() => v.byTestId('cloud-unbind-code') !== null, 'the 2FA field');
    await submit('confirm-ok');
    expect(v.byTestId('cloud-unbind-dialog')?.textContent).toContain(
      en.cloud.unbind.passwordRequired,
    );
    expect(v.byTestId('cloud-unbind-dialog')?.textContent).toContain(en.twofa.codeRequired);
    expect(requests.some((r) => r.path === '/api/cloud/unbind')).toBe(false);

    typeInto(v.byTestId('cloud-unbind-password'), 'wrong');
    typeInto(v.byTestId('cloud-unbind-code'), '111111');
    await submit('confirm-ok');
    await waitFor(() => v.byTestId('cloud-unbind-error') !== null, 'the failure');
    expect(text('cloud-unbind-error')).toBe(en.cloud.unbind.failed);
    expect(v.byTestId('cloud-unbind-dialog')).not.toBeNull();

    typeInto(v.byTestId('cloud-unbind-password'), 'admin-pass');
    typeInto(v.byTestId('cloud-unbind-code'), '246810');
    await submit('confirm-ok');
    await waitFor(() => v.byTestId('cloud-bound')?.dataset['bound'] === 'false', 'unbound');
    expect(body('/api/cloud/unbind')).toEqual({ passwd: 'admin-pass', code: '246810' });
    expect(text('cloud-account')).toBe('—');
  });

  it('without 2FA only the password is asked and sent', async () => {
    routes['/api/2fa/is_enabled'] = () => envelope(200, { enabled: false });
    routes['/api/cloud/unbind'] = () => {
      device = status();
      return envelope(200, device);
    };
    const v = await open(BOUND);
    click(v.byTestId('cloud-unbind'));
    await waitFor(() => v.byTestId('cloud-unbind-password') !== null, 'the dialog');
    await flush();
    expect(v.byTestId('cloud-unbind-code')).toBeNull();
    typeInto(v.byTestId('cloud-unbind-password'), 'admin-pass');
    await submit('confirm-ok');
    await waitFor(() => v.byTestId('cloud-bound')?.dataset['bound'] === 'false', 'unbound');
    expect(body('/api/cloud/unbind')).toEqual({ passwd: 'admin-pass' });
  });
});
