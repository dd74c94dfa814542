import { describe, expect, it, vi } from 'vitest';
import {
  detectEmbedKind,
  EmbedBridge,
  parseBoolParam,
  parseHostSettings,
  type EmbedWindow,
} from './embed';

function fakeWindow(overrides: Partial<EmbedWindow> = {}, search = ''): EmbedWindow {
  const win: EmbedWindow = {
    self: null,
    top: null,
    parent: { postMessage: vi.fn() },
    location: { search },
    open: vi.fn(),
    ...overrides,
  };
  // Top-level window unless the test says otherwise.
  if (!('self' in overrides)) win.self = win;
  if (!('top' in overrides)) win.top = win;
  return win;
}

describe('detectEmbedKind', () => {
  it('is null for a top-level page', () => {
    expect(detectEmbedKind(fakeWindow())).toBeNull();
  });

  it('detects an iframe by self !== top', () => {
    expect(detectEmbedKind(fakeWindow({ top: {} }))).toBe('iframe');
  });

  it('treats a top that cannot be read as an iframe', () => {
    const win = fakeWindow();
    Object.defineProperty(win, 'top', {
      get() {
        throw new DOMException('cross-origin', 'SecurityError');
      },
    });
    expect(detectEmbedKind(win)).toBe('iframe');
  });

  it('detects webviews before anything else', () => {
    expect(
      detectEmbedKind(fakeWindow({ ReactNativeWebView: { postMessage: vi.fn() }, top: {} })),
    ).toBe('react-native');
    expect(detectEmbedKind(fakeWindow({ chrome: { webview: { postMessage: vi.fn() } } }))).toBe(
      'webview2',
    );
  });

  it('honours embedded=1 in the query', () => {
    expect(detectEmbedKind(fakeWindow({}, '?embedded=1'))).toBe('query');
    expect(detectEmbedKind(fakeWindow({}, '?embedded=0'))).toBeNull();
  });
});

/** An iframe of the device https://kvm.lan whose parent has `parent` as origin. */
function framed(parent: string | null, how: 'ancestors' | 'referrer' = 'ancestors') {
  return fakeWindow({
    top: {},
    location: {
      search: '',
      origin: 'https://kvm.lan',
      ...(how === 'ancestors' && parent !== null ? { ancestorOrigins: [parent] } : {}),
    },
    document: { referrer: how === 'referrer' && parent !== null ? `${parent}/page?x=1` : '' },
  });
}

describe('EmbedBridge.post', () => {
  it("posts to the parent frame's own origin, the token only to its own origin or an official host", () => {
    const LOGIN = { type: 'login_success', token: 't' } as const;
    for (const parent of ['https://kvm.lan', 'https://www.glkvm.com', 'https://cloud.gl-inet.cn']) {
      const win = framed(parent);
      expect(new EmbedBridge(win).post(LOGIN)).toBe(true);
      expect(win.parent.postMessage).toHaveBeenCalledWith(LOGIN, parent);
    }
    // Another embedder the administrator allowed learns of the login, not the token.
    for (const parent of [
      'https://intranet.example',
      'http://www.glkvm.com',
      'https://evilglkvm.com',
    ]) {
      const win = framed(parent, 'referrer');
      new EmbedBridge(win).post(LOGIN);
      expect(win.parent.postMessage).toHaveBeenCalledWith({ type: 'login_success' }, parent);
    }
    // The parent's origin unknown (referrer hidden): nothing secret, addressed to any.
    const hidden = framed(null);
    new EmbedBridge(hidden).post(LOGIN);
    expect(hidden.parent.postMessage).toHaveBeenCalledWith({ type: 'login_success' }, '*');
    new EmbedBridge(hidden).post({ type: 'open_window_url', url: '/webterm' });
    expect(hidden.parent.postMessage).toHaveBeenCalledWith(
      { type: 'open_window_url', url: '/webterm' },
      '*',
    );
  });

  it('posts JSON strings to webviews', () => {
    const rn = { postMessage: vi.fn() };
    new EmbedBridge(fakeWindow({ ReactNativeWebView: rn })).post({
      type: 'download_file',
      url: '/api/log',
      filename: 'log.txt',
    });
    expect(rn.postMessage).toHaveBeenCalledWith(
      '{"type":"download_file","url":"/api/log","filename":"log.txt"}',
    );
    const wv2 = { postMessage: vi.fn() };
    new EmbedBridge(fakeWindow({ chrome: { webview: wv2 } })).post({
      type: 'open_window_url',
      url: '/webterm',
    });
    expect(wv2.postMessage).toHaveBeenCalledWith('{"type":"open_window_url","url":"/webterm"}');
  });

  it('posts nothing when not embedded', () => {
    const win = fakeWindow();
    expect(new EmbedBridge(win).post({ type: 'login_success', token: 't' })).toBe(false);
    expect(win.parent.postMessage).not.toHaveBeenCalled();
  });

  it('opens windows itself when top-level and through the host when embedded', () => {
    const top = fakeWindow();
    new EmbedBridge(top).openWindowUrl('/webterm');
    expect(top.open).toHaveBeenCalledWith('/webterm', '_blank', 'noopener');
    const rn = { postMessage: vi.fn() };
    const embedded = fakeWindow({ ReactNativeWebView: rn });
    new EmbedBridge(embedded).openWindowUrl('/webterm');
    expect(embedded.open).not.toHaveBeenCalled();
    expect(rn.postMessage).toHaveBeenCalledOnce();
  });

  it('asks the host for downloads only when embedded', () => {
    expect(new EmbedBridge(fakeWindow()).requestDownload('/x')).toBe(false);
    const win = framed('https://app.example');
    expect(new EmbedBridge(win).requestDownload('/x')).toBe(true);
    expect(win.parent.postMessage).toHaveBeenCalledWith(
      { type: 'download_file', url: '/x' },
      'https://app.example',
    );
  });
});

describe('showRefreshOnConnectionLost', () => {
  it('defaults to true', () => {
    expect(new EmbedBridge(fakeWindow()).getSnapshot().showRefreshOnConnectionLost).toBe(true);
  });

  it.each([
    ['0', false],
    ['false', false],
    ['1', true],
    ['true', true],
    ['maybe', true],
  ])('reads ?showRefreshOnConnectionLost=%s', (value, expected) => {
    const bridge = new EmbedBridge(fakeWindow({}, `?showRefreshOnConnectionLost=${value}`));
    expect(bridge.getSnapshot().showRefreshOnConnectionLost).toBe(expected);
  });

  it('follows a settings message from the host (object or JSON string) and notifies', () => {
    const bridge = new EmbedBridge(fakeWindow({ top: {} }));
    const listener = vi.fn();
    bridge.subscribe(listener);
    expect(bridge.handleHostMessage({ type: 'settings', showRefreshOnConnectionLost: false })).toBe(
      true,
    );
    expect(bridge.getSnapshot().showRefreshOnConnectionLost).toBe(false);
    bridge.handleHostMessage('{"type":"settings","showRefreshOnConnectionLost":true}');
    expect(bridge.getSnapshot().showRefreshOnConnectionLost).toBe(true);
    expect(listener).toHaveBeenCalledTimes(2);
    expect(bridge.handleHostMessage({ type: 'other' })).toBe(false);
    expect(bridge.handleHostMessage('not json')).toBe(false);
  });

  it('listens only to the parent frame or webview hosts', () => {
    let handler: ((event: MessageEvent) => void) | undefined;
    const win = fakeWindow({
      top: {},
      addEventListener: (_type, listener) => {
        handler = listener;
      },
      removeEventListener: vi.fn(),
    });
    const bridge = new EmbedBridge(win);
    const stop = bridge.listen();
    const settings = { type: 'settings', showRefreshOnConnectionLost: false };
    handler?.({ source: {}, data: settings } as MessageEvent);
    expect(bridge.getSnapshot().showRefreshOnConnectionLost).toBe(true);
    handler?.({ source: win.parent, data: settings } as unknown as MessageEvent);
    expect(bridge.getSnapshot().showRefreshOnConnectionLost).toBe(false);
    stop();
    expect(win.removeEventListener).toHaveBeenCalled();
  });
});

describe('parsers', () => {
  it('parseBoolParam', () => {
    expect(parseBoolParam(null)).toBeUndefined();
    expect(parseBoolParam(' TRUE ')).toBe(true);
    expect(parseBoolParam('0')).toBe(false);
  });

  it('parseHostSettings ignores non-boolean values', () => {
    expect(parseHostSettings({ type: 'settings', showRefreshOnConnectionLost: 'no' })).toEqual({});
    expect(parseHostSettings(null)).toBeNull();
  });
});
