/**
 * SPEC 3's browser key `dynamic_code`: the 2FA code this browser just had accepted. The server
 * refuses a used code like a wrong one (and counts it towards the lock); the console says so
 * instead of sending it, for as long as the code could be valid (90 s).
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { act } from 'react';
import { STORAGE_KEYS } from '@kvm/protocol/constants';
import { NotifyProvider } from '../../components/notify';
import { envelope, stubFetch, type RecordedRequest } from '../../test/fetch-stub';
import { flush, render, type Rendered } from '../../test/render';
import { useSession } from '../session/session-store';
import { TwoFaSettings } from '../settings/TwoFaSettings';
import {
  DYNAMIC_CODE_VALID_MS,
  forgetUsedCode,
  rememberUsedCode,
  wasCodeJustUsed,
} from './dynamic-code';

beforeEach(() => localStorage.clear());

describe('dynamic_code', () => {
  it('remembers an accepted code under dynamic_code for 90 s', () => {
    rememberUsedCode('123456', 1_000);
    expect(JSON.parse(localStorage.getItem(STORAGE_KEYS.dynamicCode)!)).toEqual({
      code: '123456',
      at: 1_000,
    });
    expect(wasCodeJustUsed('123456', 1_000 + DYNAMIC_CODE_VALID_MS - 1)).toBe(true);
    expect(wasCodeJustUsed('654321', 2_000)).toBe(false);
    expect(wasCodeJustUsed('123456', 1_000 + DYNAMIC_CODE_VALID_MS)).toBe(false);
    // An expired entry is dropped.
    expect(localStorage.getItem(STORAGE_KEYS.dynamicCode)).toBeNull();
  });

  it('ignores a damaged entry and forgets on request', () => {
    localStorage.setItem(STORAGE_KEYS.dynamicCode, '{not json');
    expect(wasCodeJustUsed('123456')).toBe(false);
    rememberUsedCode('123456');
    forgetUsedCode();
    expect(wasCodeJustUsed('123456')).toBe(false);
  });
});

function byId(id: string): HTMLElement | null {
  return document.querySelector<HTMLElement>(`[data-testid="${id}"]`);
}

function typeCode(value: string) {
  const el = byId('twofa-disable-code');
  const input = el?.tagName === 'INPUT' ? el : el?.querySelector('input');
  if (!(input instanceof HTMLInputElement)) throw new Error('no code input');
  const setter = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value')?.set;
  act(() => {
    setter?.call(input, value);
    input.dispatchEvent(new Event('input', { bubbles: true }));
  });
}

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
    view = await render(
      <NotifyProvider>
        <TwoFaSettings />
      </NotifyProvider>,
    );
    await flush();
    act(() => byId('twofa-disable')?.click());
    await flush();

    typeCode('123456');
    act(() => byId('confirm-ok')?.click());
    await flush();
    expect(byId('twofa-disable-code-error')?.textContent).toBe(
      'This code has just been used. Wait for the next code in your authenticator app.',
    );
    expect(deletes).toHaveLength(0);
    expect(useSession.getState().twofaEnabled).toBe(true);

    typeCode('654321');
    act(() => byId('confirm-ok')?.click());
    await flush();
    expect(deletes).toHaveLength(1);
    expect(deletes[0]?.query.get('code')).toBe('654321');
    expect(useSession.getState().twofaEnabled).toBe(false);
    expect(localStorage.getItem(STORAGE_KEYS.dynamicCode)).toBeNull();
  });
});
