import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { STORAGE_KEYS } from '@kvm/protocol/constants';
import { envelope, stubFetch } from '../test/fetch-stub';
import { api, buildApiUrl } from './api';
import {
  getBase,
  setBaseMetaForTests as setMeta,
  parseBase,
  stripBase,
  storageKey,
  withBase,
} from './base';
import { eventSocketUrl } from './event-socket';
import { mediaSocketUrl } from './h264-direct';
import { janusServerUrl } from './janus-stream-signalling';
import { getAuthToken, readStorage, setAuthToken, writeStorage } from './storage';

const HTTPS = { protocol: 'https:', host: 'fleet.example:8443' };

beforeEach(() => localStorage.clear());
afterEach(() => {
  setMeta(null);
  vi.unstubAllGlobals();
  vi.restoreAllMocks();
});

describe('parseBase', () => {
  it('takes a plain absolute path, without its trailing slash', () => {
    expect(parseBase('/d/abc123')).toBe('/d/abc123');
    expect(parseBase('/d/abc123/')).toBe('/d/abc123');
    expect(parseBase('/d/A-b_c.9~')).toBe('/d/A-b_c.9~');
  });

  it('refuses anything else: nothing changes then', () => {
    for (const bad of [
      null,
      undefined,
      '',
      '/',
      'd/abc',
      '//evil.example/x',
      '/d/../api',
      '/d/./x',
      '/d/a b',
      '/d/a?x=1',
      '/d/a#x',
      'https://evil.example/d/1',
      '/d//x',
    ]) {
      expect(parseBase(bad), String(bad)).toBe('');
    }
  });
});

describe('without the kvm-base meta (served by the device)', () => {
  it('builds every URL as before', async () => {
    expect(getBase()).toBe('');
    expect(buildApiUrl('/info')).toBe('/api/info');
    expect(eventSocketUrl(HTTPS, null)).toBe('wss://fleet.example:8443/api/ws');
    expect(janusServerUrl(HTTPS, null)).toBe('wss://fleet.example:8443/janus/ws');
    expect(mediaSocketUrl(HTTPS, null)).toBe('wss://fleet.example:8443/api/media/ws');
    expect(withBase('/webterm')).toBe('/webterm');
    expect(stripBase('/upgrading')).toBe('/upgrading');
    expect(storageKey(STORAGE_KEYS.authToken)).toBe('auth_token');
    setAuthToken('t1');
    expect(localStorage.getItem('auth_token')).toBe('t1');
    const { requests } = stubFetch({ '/api/auth/check': () => envelope(200, { user: 'admin' }) });
    await api.get('/auth/check');
    expect(requests[0]?.url).toBe('/api/auth/check');
  });
});

describe('under /d/<id> (through a fleet server)', () => {
  beforeEach(() => setMeta('/d/dev1'));

  it('prefixes API calls and every WebSocket', async () => {
    expect(getBase()).toBe('/d/dev1');
    expect(buildApiUrl('/info', { fields: 'system' })).toBe('/d/dev1/api/info?fields=system');
    expect(eventSocketUrl(HTTPS, null, true)).toBe(
      'wss://fleet.example:8443/d/dev1/api/ws?stream=1',
    );
    expect(eventSocketUrl({ protocol: 'http:', host: 'h' }, null)).toBe('ws://h/d/dev1/api/ws');
    expect(janusServerUrl(HTTPS, null)).toBe('wss://fleet.example:8443/d/dev1/janus/ws');
    expect(mediaSocketUrl(HTTPS, null)).toBe('wss://fleet.example:8443/d/dev1/api/media/ws');
    const { requests } = stubFetch({
      '/d/dev1/api/auth/check': () => envelope(200, { user: 'admin' }),
    });
    await expect(api.get('/auth/check')).resolves.toEqual({ user: 'admin' });
    expect(requests[0]?.url).toBe('/d/dev1/api/auth/check');
  });

  it('maps page paths in and out of the base', () => {
    expect(withBase('/webterm')).toBe('/d/dev1/webterm');
    expect(withBase('/')).toBe('/d/dev1/');
    expect(stripBase('/d/dev1/upgrading')).toBe('/upgrading');
    expect(stripBase('/d/dev1')).toBe('/');
    expect(stripBase('/d/dev1/')).toBe('/');
    // Another device's path is not ours.
    expect(stripBase('/d/dev10/upgrading')).toBe('/d/dev10/upgrading');
  });

  it('keeps each device its own token and settings: two tabs do not mix', async () => {
    setAuthToken('token-of-dev1');
    writeStorage(STORAGE_KEYS.videoMode, 'direct_h264');
    setMeta('/d/dev2');
    expect(getAuthToken()).toBeNull();
    expect(readStorage(STORAGE_KEYS.videoMode)).toBeNull();
    setAuthToken('token-of-dev2');
    // No Token header leaks from one device's tab to the other's calls.
    const { requests } = stubFetch({ '/d/dev2/api/auth/check': () => envelope(200, {}) });
    await api.get('/auth/check');
    expect(requests[0]?.headers.token).toBe('token-of-dev2');
    setMeta('/d/dev1');
    expect(getAuthToken()).toBe('token-of-dev1');
    expect(readStorage(STORAGE_KEYS.videoMode)).toBe('direct_h264');
    // The device's own origin (no base) never sees either.
    setMeta(null);
    expect(getAuthToken()).toBeNull();
    expect(localStorage.getItem('/d/dev1/auth_token')).toBe('token-of-dev1');
  });

  it('with no stored token, calls carry none (the fleet-attached session is the cookie)', async () => {
    const { requests } = stubFetch({ '/d/dev1/api/auth/check': () => envelope(200, {}) });
    localStorage.setItem('auth_token', 'the-device-origin-token');
    await api.get('/auth/check');
    expect(requests[0]?.headers.token).toBeUndefined();
  });
});
