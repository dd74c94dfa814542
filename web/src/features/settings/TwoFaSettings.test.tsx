import { afterEach, describe, expect, it, vi } from 'vitest';
import { act } from 'react';
import { envelope, stubFetch, type RecordedRequest } from '../../test/fetch-stub';
import { flush, type Rendered, renderPanel } from '../../test/render';
import { typeInto } from '../../test/dom';
import { useSession } from '../session/session-store';
import { TwoFaSettings } from './TwoFaSettings';
import { rememberUsedCode } from '../auth/dynamic-code';
import { STORAGE_KEYS } from '@kvm/protocol/constants';

function byId(id: string): HTMLElement | null {
  return document.querySelector<HTMLElement>(`[data-testid="${id}"]`);
}

function codeInput(): HTMLInputElement {
  const el = byId('twofa-disable-code');
  const input = el?.tagName === 'INPUT' ? el : el?.querySelector('input');
  if (!(input instanceof HTMLInputElement)) throw new Error('no code input');
  return input;
}

async function confirm() {
  act(() => byId('confirm-ok')?.click());
  await flush();
}

describe('TwoFaSettings: turning 2FA off', () => {
  let view: Rendered | undefined;
  afterEach(() => {
    view?.unmount();
    view = undefined;
    vi.unstubAllGlobals();
    document.body.innerHTML = '';
  });

  it('asks for the 6-digit code and sends it; a wrong code keeps the dialog open', async () => {
    const deletes: RecordedRequest[] = [];
    let deleteStatus = 403;
    stubFetch({
      '/api/2fa/is_enabled': () => envelope(200, { enabled: true, trusted: false }),
      '/api/2fa/delete': (req) => {
        deletes.push(req);
        return deleteStatus === 200
          ? envelope(200, {})
          : envelope(deleteStatus, { error: 'ForbiddenError', error_msg: 'Invalid 2FA code' });
      },
    });
    useSession.setState({ twofaEnabled: true });
    view = await renderPanel(<TwoFaSettings />);
    act(() => byId('twofa-disable')?.click());
    await flush();

    // SPEC 5: empty and short codes, then six characters that are not all digits
    await confirm();
    expect(byId('twofa-disable-code-error')?.textContent).toBe('Please enter 6-digit code');
    typeInto(codeInput(), '12ab56');
    await confirm();
    expect(byId('twofa-disable-code-error')?.textContent).toBe('Code is invalid.');
    expect(deletes).toHaveLength(0);

    // the server refuses the code: the same message, the dialog stays, 2FA stays on
    typeInto(codeInput(), '123456');
    await confirm();
    expect(deletes).toHaveLength(1);
    expect(deletes[0]?.query.get('code')).toBe('123456');
    expect(byId('twofa-disable-code-error')?.textContent).toBe('Code is invalid.');
    expect(useSession.getState().twofaEnabled).toBe(true);
    expect(byId('twofa-disable-code')).not.toBeNull();

    deleteStatus = 200;
    typeInto(codeInput(), '654321');
    await confirm();
    expect(deletes.at(-1)?.query.get('code')).toBe('654321');
    await vi.waitFor(() => expect(useSession.getState().twofaEnabled).toBe(false));
  });
});

// SPEC 3's dynamic_code (web/src/features/auth/dynamic-code.ts)
describe('turning 2FA off with the code just used to log in', () => {
  let view: Rendered | undefined;
  afterEach(() => {
    view?.unmount();
    view = undefined;
    vi.unstubAllGlobals();
    document.body.innerHTML = '';
  });

  it('says the code was used and does not send it; the next code goes through and is forgotten', async () => {
    const deletes: RecordedRequest[] = [];
    stubFetch({
      '/api/2fa/is_enabled': () => envelope(200, { enabled: true, trusted: false }),
      '/api/2fa/delete': (req) => {
        deletes.push(req);
        return envelope(200, {});
      },
    });
    rememberUsedCode('123456'); // the 2FA login a moment ago
    useSession.setState({ twofaEnabled: true });
    view = await renderPanel(<TwoFaSettings />);
    act(() => byId('twofa-disable')?.click());
    await flush();

    typeInto(codeInput(), '123456');
    act(() => byId('confirm-ok')?.click());
    await flush();
    expect(byId('twofa-disable-code-error')?.textContent).toBe(
      'This code has just been used. Wait for the next code in your authenticator app.',
    );
    expect(deletes).toHaveLength(0);
    expect(useSession.getState().twofaEnabled).toBe(true);

    typeInto(codeInput(), '654321');
    act(() => byId('confirm-ok')?.click());
    await flush();
    expect(deletes).toHaveLength(1);
    expect(deletes[0]?.query.get('code')).toBe('654321');
    expect(useSession.getState().twofaEnabled).toBe(false);
    expect(localStorage.getItem(STORAGE_KEYS.dynamicCode)).toBeNull();
  });
});
