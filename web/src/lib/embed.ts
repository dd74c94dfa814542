/**
 * Embedded mode (SPEC 1): the console may run inside an iframe or a desktop/mobile webview. It
 * then tells the host application about things the host must do itself (open a window, save a
 * file) and about a successful login, and the host may tune the connection-lost overlay.
 *
 * An iframe's messages go to the parent's own origin (a parent that navigated away must not
 * get them; `*` only when the browser hides that origin). The session token of `login_success` goes only to a parent the
 * console trusts with it: its own origin or an official host (SPEC 9, protocol/hosts.ts);
 * another embedder the administrator allowed (`server.frame_ancestors`) learns of the login
 * without the token. Webviews are the host application itself.
 */
import { isOfficialOrigin } from '@kvm/protocol/hosts';

/** Messages to the host application (SPEC 1). */
export type HostMessage =
  | { type: 'open_window_url'; url: string }
  | { type: 'download_file'; url: string; filename?: string }
  | { type: 'login_success'; token: string };

/** How the console is embedded: which channel reaches the host. */
export type EmbedKind = 'react-native' | 'webview2' | 'iframe' | 'query';

/** The parts of `window` this module reads, so tests can pass a plain object. */
export interface EmbedWindow {
  self: unknown;
  top: unknown;
  parent: { postMessage(message: unknown, targetOrigin: string): void };
  location: {
    search: string;
    /** The console's own origin. */
    origin?: string;
    /** Chromium and Safari: the origins of the frames above, the parent's first. */
    ancestorOrigins?: ArrayLike<string>;
  };
  /** The parent's address when the browser tells (the referrer policy may hide it). */
  document?: { referrer: string };
  /** react-native-webview injects this. */
  ReactNativeWebView?: { postMessage(data: string): void };
  /** Microsoft WebView2 (desktop hosts). */
  chrome?: { webview?: { postMessage(data: unknown): void } };
  open?(url: string, target?: string, features?: string): unknown;
  addEventListener?(type: 'message', listener: (event: MessageEvent) => void): void;
  removeEventListener?(type: 'message', listener: (event: MessageEvent) => void): void;
}

export interface EmbedSnapshot {
  embedded: boolean;
  kind: EmbedKind | null;
  /** SPEC 1: controls the refresh button of the connection-lost overlay. Default on. */
  showRefreshOnConnectionLost: boolean;
}

function inIframe(win: EmbedWindow): boolean {
  try {
    return win.self !== win.top;
  } catch {
    // Reading `top` of a cross-origin parent may throw in old browsers: that is an iframe.
    return true;
  }
}

/** Which host channel exists, webviews first (they may also report self !== top). */
export function detectEmbedKind(win: EmbedWindow): EmbedKind | null {
  if (win.ReactNativeWebView && typeof win.ReactNativeWebView.postMessage === 'function') {
    return 'react-native';
  }
  if (win.chrome?.webview && typeof win.chrome.webview.postMessage === 'function') {
    return 'webview2';
  }
  if (inIframe(win)) return 'iframe';
  if (new URLSearchParams(win.location.search).get('embedded') === '1') return 'query';
  return null;
}

/** `1|true` → true, `0|false` → false, anything else (or absent) → undefined. */
export function parseBoolParam(value: string | null | undefined): boolean | undefined {
  if (value === null || value === undefined) return undefined;
  const v = value.trim().toLowerCase();
  if (v === '1' || v === 'true') return true;
  if (v === '0' || v === 'false') return false;
  return undefined;
}

/** A host `settings` message, as an object or (webviews) a JSON string. */
export function parseHostSettings(data: unknown): { showRefreshOnConnectionLost?: boolean } | null {
  let value = data;
  if (typeof value === 'string') {
    try {
      value = JSON.parse(value) as unknown;
    } catch {
      return null;
    }
  }
  if (typeof value !== 'object' || value === null) return null;
  const record = value as Record<string, unknown>;
  if (record.type !== 'settings') return null;
  const out: { showRefreshOnConnectionLost?: boolean } = {};
  if (typeof record.showRefreshOnConnectionLost === 'boolean') {
    out.showRefreshOnConnectionLost = record.showRefreshOnConnectionLost;
  }
  return out;
}

/** The parent frame's origin: `ancestorOrigins`, else the referrer's; null when unknown. */
export function parentOrigin(win: EmbedWindow): string | null {
  const ancestor = win.location.ancestorOrigins?.[0];
  if (ancestor && ancestor !== 'null') return ancestor;
  const referrer = win.document?.referrer;
  if (!referrer) return null;
  try {
    const origin = new URL(referrer).origin;
    return origin === 'null' ? null : origin;
  } catch {
    return null;
  }
}

/** Whether the session token may go to a parent of `origin` (see the file comment). */
export function trustsParentWithToken(win: EmbedWindow, origin: string): boolean {
  return origin === win.location.origin || isOfficialOrigin(origin);
}

export class EmbedBridge {
  private readonly win: EmbedWindow;
  private snapshot: EmbedSnapshot;
  private readonly listeners = new Set<() => void>();

  constructor(win: EmbedWindow) {
    this.win = win;
    const kind = detectEmbedKind(win);
    const fromQuery = parseBoolParam(
      new URLSearchParams(win.location.search).get('showRefreshOnConnectionLost'),
    );
    this.snapshot = {
      embedded: kind !== null,
      kind,
      showRefreshOnConnectionLost: fromQuery ?? true,
    };
  }

  getSnapshot = (): EmbedSnapshot => this.snapshot;

  subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  };

  /**
   * Posts to the host. iframe: `parent.postMessage(msg, <the parent's origin>)`, the token of
   * `login_success` only to a trusted parent; webviews: their own postMessage with a JSON
   * string. Returns false when nothing was posted.
   */
  post(message: HostMessage): boolean {
    const { win } = this;
    switch (this.snapshot.kind) {
      case 'react-native':
        win.ReactNativeWebView?.postMessage(JSON.stringify(message));
        return true;
      case 'webview2':
        win.chrome?.webview?.postMessage(JSON.stringify(message));
        return true;
      case 'iframe':
        return this.postToParent(message);
      case 'query':
        // `embedded=1` without a detectable channel: try the parent if there is one.
        return inIframe(win) && this.postToParent(message);
      case null:
        return false;
    }
  }

  private postToParent(message: HostMessage): boolean {
    const origin = parentOrigin(this.win);
    // An unknown parent (its referrer hidden) gets what holds no secret, addressed to any.
    const trusted = origin !== null && trustsParentWithToken(this.win, origin);
    const sent: HostMessage | { type: 'login_success' } =
      message.type === 'login_success' && !trusted ? { type: 'login_success' } : message;
    this.win.parent.postMessage(sent, origin ?? '*');
    return true;
  }

  /** Applies a message from the host; returns whether it was a settings message. */
  handleHostMessage(data: unknown): boolean {
    const settings = parseHostSettings(data);
    if (!settings) return false;
    if (
      settings.showRefreshOnConnectionLost !== undefined &&
      settings.showRefreshOnConnectionLost !== this.snapshot.showRefreshOnConnectionLost
    ) {
      this.snapshot = {
        ...this.snapshot,
        showRefreshOnConnectionLost: settings.showRefreshOnConnectionLost,
      };
      for (const listener of this.listeners) listener();
    }
    return true;
  }

  /** Listens for host messages; returns the function that stops listening. */
  listen(): () => void {
    const { win } = this;
    const onMessage = (event: MessageEvent) => {
      // Only the host may tune us: the parent frame, or a webview (which posts with no source).
      if (event.source !== null && event.source !== (win.parent as unknown)) return;
      this.handleHostMessage(event.data);
    };
    win.addEventListener?.('message', onMessage);
    return () => win.removeEventListener?.('message', onMessage);
  }

  /** Opens a URL in a new window, or asks the host to when embedded (webviews cannot). */
  openWindowUrl(url: string): void {
    if (this.snapshot.embedded && this.post({ type: 'open_window_url', url })) return;
    this.win.open?.(url, '_blank', 'noopener');
  }

  /** Asks the host to download when embedded; returns false when the caller must do it. */
  requestDownload(url: string, filename?: string): boolean {
    if (!this.snapshot.embedded) return false;
    const message: HostMessage =
      filename === undefined
        ? { type: 'download_file', url }
        : { type: 'download_file', url, filename };
    return this.post(message);
  }
}

let shared: EmbedBridge | null = null;

/** The bridge of the real window, created on first use. */
export function getEmbed(): EmbedBridge {
  shared ??= new EmbedBridge(window as unknown as EmbedWindow);
  return shared;
}
