import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { CloudStatus } from '@kvm/protocol/cloud';
import { STORAGE_KEYS } from '@kvm/protocol/constants';
import { ApiError } from '../../lib/api';
import { envelope, stubFetch, type RecordedRequest } from '../../test/fetch-stub';
import { rememberUsedCode, wasCodeJustUsed } from '../auth/dynamic-code';
import {
  asksForTotp,
  CLOUD_POLL_MS,
  requestBindCode,
  resetCloudForTests,
  resumeBindCode,
  useCloud,
} from './cloud-store';

const UNBOUND: CloudStatus = {
  enabled: true,
  bound: false,
  state: 'unbound',
  url: 'https://fleet.test',
  pinned: null,
  device: { id: null, mac: '02:00:00:00:00:01', serial: 'SN1' },
  account: null,
  bound_at: null,
  replica: null,
  error: null,
};

let requests: RecordedRequest[];
let device: CloudStatus;
const polls = () => requests.filter((r) => r.path === '/api/cloud/status').length;

beforeEach(() => {
  vi.useFakeTimers({ now: 1_000_000 });
  localStorage.clear();
  resetCloudForTests();
  device = UNBOUND;
  ({ requests } = stubFetch({
    '/api/cloud/status': () => envelope(200, device),
    '/api/cloud/bind/code': () => envelope(200, { code: '13572468', expires_in: 60 }),
  }));
});

afterEach(() => {
  resetCloudForTests();
  vi.useRealTimers();
  vi.unstubAllGlobals();
});

describe('status polling while a bind code is shown (cloud_bind_status_polling)', () => {
  it('polls every few seconds until the code expires', async () => {
    await requestBindCode();
    expect(useCloud.getState().polling).toBe(true);
    expect(localStorage.getItem(STORAGE_KEYS.cloudBindStatusPolling)).toBe(
      String(1_000_000 + 60_000),
    );
    await vi.advanceTimersByTimeAsync(CLOUD_POLL_MS * 3);
    expect(polls()).toBe(3);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(useCloud.getState().polling).toBe(false);
    // Every 3 s before the 60 s are up: 19 reads, none after.
    expect(polls()).toBe(19);
    await vi.advanceTimersByTimeAsync(CLOUD_POLL_MS * 5);
    expect(polls()).toBe(19);
    expect(localStorage.getItem(STORAGE_KEYS.cloudBindStatusPolling)).toBeNull();
  });

  it('stops at the binding, and forgets the code', async () => {
    await requestBindCode();
    await vi.advanceTimersByTimeAsync(CLOUD_POLL_MS);
    device = {
      ...UNBOUND,
      bound: true,
      state: 'connecting',
      device: { ...UNBOUND.device, id: 'd1' },
    };
    await vi.advanceTimersByTimeAsync(CLOUD_POLL_MS);
    expect(useCloud.getState().status?.bound).toBe(true);
    expect(useCloud.getState().polling).toBe(false);
    expect(useCloud.getState().code).toBeNull();
    const after = polls();
    await vi.advanceTimersByTimeAsync(CLOUD_POLL_MS * 5);
    expect(polls()).toBe(after);
    expect(localStorage.getItem(STORAGE_KEYS.dynamicCode)).toBeNull();
  });

  it('a reload takes the wait up again while the code is valid, not after', () => {
    localStorage.setItem(
      STORAGE_KEYS.dynamicCode,
      JSON.stringify({ bind_code: '11112222', expires_at: 1_000_000 + 20_000 }),
    );
    localStorage.setItem(STORAGE_KEYS.cloudBindStatusPolling, String(1_000_000 + 20_000));
    expect(resumeBindCode()).toEqual({ code: '11112222', expiresAt: 1_020_000 });
    expect(useCloud.getState().polling).toBe(true);
    resetCloudForTests();
    expect(resumeBindCode(1_000_000 + 25_000)).toBeNull();
    expect(useCloud.getState().polling).toBe(false);
    expect(localStorage.getItem(STORAGE_KEYS.cloudBindStatusPolling)).toBeNull();
  });
});

describe('dynamic_code: the bind code beside the 2FA guard’s used code', () => {
  it('each reader ignores the other’s shape', async () => {
    rememberUsedCode('123456', 1_000_000);
    expect(resumeBindCode()).toBeNull();
    await requestBindCode();
    expect(wasCodeJustUsed('13572468', 1_000_000)).toBe(false);
    expect(resumeBindCode()?.code).toBe('13572468');
  });
});

describe('asksForTotp', () => {
  it('knows the fleet asking for the account’s 2FA code, and nothing else', () => {
    expect(
      asksForTotp(new ApiError(401, { error: 'X', error_msg: 'x', totp_required: true } as never)),
    ).toBe(true);
    expect(
      asksForTotp(
        new ApiError(403, {
          error: 'CloudForbiddenError',
          error_msg: 'The fleet refused: This account asks for a 2FA code',
        }),
      ),
    ).toBe(true);
    expect(
      asksForTotp(
        new ApiError(403, {
          error: 'CloudForbiddenError',
          error_msg: 'The fleet refused: Invalid or reused 2FA code',
        }),
      ),
    ).toBe(false);
    expect(asksForTotp(new Error('asks for a 2FA code'))).toBe(false);
  });
});
