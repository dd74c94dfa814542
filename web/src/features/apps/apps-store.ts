/**
 * The apps center's state (issue 27, docs/apps.md "Apps center (console)"): the list as the
 * device reports it (`GET /api/apps`), which app is open, and Tailscale's bind wait.
 *
 * Browser key (SPEC 3): `tailscale_bind_status_polling` holds until when the Tailscale panel
 * waits for a login (ms since the epoch), exactly as `cloud_bind_status_polling` does for the
 * cloud: a reload while a login URL is shown keeps waiting for the binding.
 */
import { create } from 'zustand';
import { APP_STATUS_POLL_MS, type AppId, type AppSummary } from '@kvm/protocol/apps';
import { STORAGE_KEYS } from '@kvm/protocol/constants';
import type { TailscaleLoginStatusAnswer } from '@kvm/protocol/tailscale';
import { readStorage, removeStorage, writeStorage } from '../../lib/storage';
import {
  listApps,
  tailscaleBound,
  tailscaleLoginStatus,
  tailscaleLoginUrl,
  tailscaleUp,
} from './apps-api';
import { VisiblePoller } from './poller';

/** How long a login URL is waited for (tailscale's login links stay valid about this long). */
export const TAILSCALE_BIND_WAIT_MS = 10 * 60_000;

export interface AppsStoreState {
  apps: AppSummary[] | null;
  /** The app whose panel is shown; null = the list. */
  open: AppId | null;
  /** Tailscale's login URL being waited for. */
  loginUrl: string | null;
  /** Tailscale's last login status. */
  login: TailscaleLoginStatusAnswer | null;
  /** The Tailscale panel polls login_status for a binding. */
  bindPolling: boolean;
}

const INITIAL: AppsStoreState = {
  apps: null,
  open: null,
  loginUrl: null,
  login: null,
  bindPolling: false,
};

export const useApps = create<AppsStoreState>(() => INITIAL);

export async function loadApps(): Promise<AppSummary[]> {
  const apps = await listApps();
  useApps.setState({ apps });
  return apps;
}

export function openApp(open: AppId | null): void {
  useApps.setState({ open });
}

export function appSummary(id: AppId): AppSummary | null {
  return useApps.getState().apps?.find((a) => a.id === id) ?? null;
}

// ---- Tailscale's bind wait ----------------------------------------------------------------------

let bindUntil = 0;
const bindPoller = new VisiblePoller(pollBind, APP_STATUS_POLL_MS);

async function pollBind(): Promise<void> {
  if (Date.now() >= bindUntil) {
    stopBindPolling();
    return;
  }
  const login = await tailscaleLoginStatus();
  useApps.setState({ login });
  if (tailscaleBound(login)) {
    stopBindPolling();
    await loadApps().catch(() => undefined);
  }
}

function startPoller(until: number): void {
  bindUntil = until;
  bindPoller.stop();
  bindPoller.start();
  useApps.setState({ bindPolling: true });
}

/**
 * Asks the device for a login URL (through `up` when a control server is given, so a headscale
 * URL is used from this login on; else GL's `login_url`), shows it and waits for the binding.
 */
export async function requestLoginUrl(
  loginServer: string | null = null,
  now: number = Date.now(),
): Promise<string> {
  let url = loginServer === null ? '' : (await tailscaleUp('', loginServer)).url;
  if (!url) url = (await tailscaleLoginUrl()).url;
  useApps.setState({ loginUrl: url || null });
  const until = now + TAILSCALE_BIND_WAIT_MS;
  writeStorage(STORAGE_KEYS.tailscaleBindStatusPolling, String(until));
  startPoller(until);
  return url;
}

/**
 * The Tailscale panel opens: a wait this browser started (this page or before a reload) goes
 * on until its time is up, and its login URL is asked for again.
 */
export async function resumeBindPolling(now: number = Date.now()): Promise<void> {
  const until = Number(readStorage(STORAGE_KEYS.tailscaleBindStatusPolling));
  if (!Number.isFinite(until) || until <= now) {
    if (readStorage(STORAGE_KEYS.tailscaleBindStatusPolling) !== null) stopBindPolling();
    return;
  }
  startPoller(until);
  const login = await tailscaleLoginStatus().catch(() => null);
  if (login) useApps.setState({ login });
  if (tailscaleBound(login)) {
    stopBindPolling();
    return;
  }
  if (useApps.getState().loginUrl === null) {
    const answer = await tailscaleLoginUrl().catch(() => null);
    if (answer?.url) useApps.setState({ loginUrl: answer.url });
  }
}

/** The binding came (or the wait ended, or the admin cancelled): forget the wait. */
export function stopBindPolling(): void {
  bindPoller.stop();
  removeStorage(STORAGE_KEYS.tailscaleBindStatusPolling);
  useApps.setState({ bindPolling: false, loginUrl: null });
}

/** The panel went away: no more polling now, but a reload or reopening takes the wait up again. */
export function pauseBindPolling(): void {
  bindPoller.stop();
  if (useApps.getState().bindPolling) useApps.setState({ bindPolling: false });
}

/** For tests. */
export function resetAppsForTests(): void {
  bindPoller.stop();
  bindUntil = 0;
  useApps.setState(INITIAL, true);
}
