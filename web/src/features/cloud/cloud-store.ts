/**
 * The device's cloud (SPEC 4 "Cloud", docs/cloud.md): its state as the device reports it
 * (`GET /api/cloud/status`, the `cloud` event), the panel's calls (docs/api.md `/api/cloud/*`),
 * the bind code the panel shows and the status polling while it waits for a binding.
 *
 * Browser keys (SPEC 3): `dynamic_code` holds the bind code shown last (`{bind_code,
 * expires_at}`; the 2FA guard of features/auth keeps its own `{code, at}` there, each reader
 * ignores the other's shape), so a panel opened again shows the same code with its time left;
 * `cloud_bind_status_polling` holds until when the panel polls (ms since the epoch), so a reload
 * while a code is shown keeps waiting for the binding.
 */
import { create } from 'zustand';
import {
  BIND_CODE_TTL_S,
  CLOUD_TIMEOUT_MS,
  type CloudBindCode,
  type CloudLogin,
  type CloudServerProbe,
  type CloudSignUp,
  type CloudStatus,
} from '@kvm/protocol/cloud';
import { STORAGE_KEYS } from '@kvm/protocol/constants';
import { api, ApiError } from '../../lib/api';
import { readStorage, removeStorage, writeStorage } from '../../lib/storage';
import { eventSocket } from '../connection/connection';

declare module '../../lib/event-socket' {
  interface EventPayloads {
    cloud: CloudStatus;
  }
}

/** How often the panel asks for the state while it waits for a binding. */
export const CLOUD_POLL_MS = 3000;
/** The e-mail code may be asked for again after this long (the fleet rate-limits too). */
export const EMAIL_RESEND_S = 60;

export interface ShownCode {
  code: string;
  /** ms since the epoch */
  expiresAt: number;
}

export interface CloudStoreState {
  status: CloudStatus | null;
  /** The last certificate probe of the server being set (cleared once it is trusted). */
  probe: CloudServerProbe | null;
  code: ShownCode | null;
  /** The panel polls the state (a bind code is shown). */
  polling: boolean;
}

const INITIAL: CloudStoreState = { status: null, probe: null, code: null, polling: false };

export const useCloud = create<CloudStoreState>(() => INITIAL);

function isStatus(value: unknown): value is CloudStatus {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as CloudStatus).state === 'string' &&
    typeof (value as CloudStatus).enabled === 'boolean'
  );
}

/** A state from the device (an answer or the `cloud` event); a binding ends the wait. */
export function applyCloudStatus(status: unknown): void {
  if (!isStatus(status)) return;
  useCloud.setState({ status });
  if (status.bound || !status.enabled) {
    stopBindPolling();
    forgetCode();
  }
}

eventSocket.on('cloud', applyCloudStatus);

export async function loadCloudStatus(): Promise<CloudStatus> {
  const status = await api.get<CloudStatus>('/cloud/status');
  applyCloudStatus(status);
  return status;
}

const fleetCall = { timeoutMs: CLOUD_TIMEOUT_MS } as const;

export async function setCloudEnabled(enable: boolean): Promise<void> {
  applyCloudStatus(await api.post<CloudStatus>('/cloud/enable', { json: { enable } }));
}

/** Sets the fleet's URL; the answer says whether its certificate is trusted. */
export async function probeServer(url: string): Promise<CloudServerProbe> {
  const probe = await api.post<CloudServerProbe>('/cloud/server', {
    json: { url: url.trim() },
    ...fleetCall,
  });
  useCloud.setState({ probe });
  await loadCloudStatus().catch(() => undefined);
  return probe;
}

/** Pins the certificate the admin has seen (its SHA-256 fingerprint). */
export async function trustServer(fingerprint: string): Promise<void> {
  applyCloudStatus(await api.post<CloudStatus>('/cloud/trust', { json: { fingerprint } }));
  useCloud.setState({ probe: null });
}

// ---- the bind code and the polling -------------------------------------------------------------

interface StoredCode {
  bind_code: string;
  expires_at: number;
}

function storedCode(now: number): ShownCode | null {
  const raw = readStorage(STORAGE_KEYS.dynamicCode);
  if (!raw) return null;
  try {
    const value = JSON.parse(raw) as Partial<StoredCode>;
    if (typeof value.bind_code !== 'string' || typeof value.expires_at !== 'number') return null;
    // A code with a second or less to go cannot be typed in anyway.
    if (value.expires_at - now <= 1000) return null;
    return { code: value.bind_code, expiresAt: value.expires_at };
  } catch {
    return null;
  }
}

function forgetCode(): void {
  useCloud.setState({ code: null });
  const raw = readStorage(STORAGE_KEYS.dynamicCode);
  if (raw?.includes('"bind_code"')) removeStorage(STORAGE_KEYS.dynamicCode);
}

let pollTimer: ReturnType<typeof setInterval> | undefined;

/** Polls the state until `until` (ms since the epoch), a binding, or stopBindPolling(). */
export function startBindPolling(until: number, now: number = Date.now()): void {
  writeStorage(STORAGE_KEYS.cloudBindStatusPolling, String(until));
  if (pollTimer !== undefined) clearInterval(pollTimer);
  useCloud.setState({ polling: true });
  pollTimer = setInterval(() => {
    if (Date.now() >= until) {
      stopBindPolling();
      return;
    }
    loadCloudStatus().catch(() => undefined);
  }, CLOUD_POLL_MS);
  if (until <= now) stopBindPolling();
}

export function stopBindPolling(): void {
  if (pollTimer !== undefined) clearInterval(pollTimer);
  pollTimer = undefined;
  removeStorage(STORAGE_KEYS.cloudBindStatusPolling);
  if (useCloud.getState().polling) useCloud.setState({ polling: false });
}

/** The panel went away: no more polling now, but a reload or reopening takes the wait up again. */
export function pauseBindPolling(): void {
  if (pollTimer !== undefined) clearInterval(pollTimer);
  pollTimer = undefined;
  if (useCloud.getState().polling) useCloud.setState({ polling: false });
}

/** A new bind code from the device (and through it the fleet); the panel then polls. */
export async function requestBindCode(now: () => number = Date.now): Promise<ShownCode> {
  const answer = await api.post<CloudBindCode>('/cloud/bind/code', fleetCall);
  const ttl = answer.expires_in > 0 ? answer.expires_in : BIND_CODE_TTL_S;
  const code: ShownCode = { code: answer.code, expiresAt: now() + ttl * 1000 };
  writeStorage(
    STORAGE_KEYS.dynamicCode,
    JSON.stringify({ bind_code: code.code, expires_at: code.expiresAt } satisfies StoredCode),
  );
  useCloud.setState({ code });
  startBindPolling(code.expiresAt, now());
  return code;
}

/**
 * The panel opens unbound: the code this browser showed last while it is still valid (and the
 * wait for it), else none (the admin asks for one).
 */
export function resumeBindCode(now: number = Date.now()): ShownCode | null {
  const code = storedCode(now);
  useCloud.setState({ code });
  const until = Number(readStorage(STORAGE_KEYS.cloudBindStatusPolling));
  if (code && Number.isFinite(until) && until > now) startBindPolling(until, now);
  else if (!code) stopBindPolling();
  return code;
}

// ---- account: login, sign-up, unbind ------------------------------------------------------------

/** The fleet account has 2FA and the login had no code: the form asks for it. */
export function asksForTotp(err: unknown): boolean {
  if (!(err instanceof ApiError)) return false;
  if (err.details['totp_required'] === true || err.error === 'CloudTotpRequiredError') return true;
  return /asks for a 2FA code/i.test(err.error_msg);
}

export async function bindWithLogin(form: CloudLogin): Promise<void> {
  applyCloudStatus(await api.post<CloudStatus>('/cloud/bind/login', { json: form, ...fleetCall }));
}

export async function sendEmailCode(email: string): Promise<void> {
  await api.post('/cloud/signup/email-code', { json: { email: email.trim() }, ...fleetCall });
}

/** Creates the fleet account, which then binds the device. */
export async function signUp(form: CloudSignUp): Promise<void> {
  applyCloudStatus(await api.post<CloudStatus>('/cloud/signup', { json: form, ...fleetCall }));
}

/** The admin password, plus the 2FA code when 2FA is on (SPEC 4). */
export async function unbind(passwd: string, code: string | null): Promise<void> {
  applyCloudStatus(
    await api.post<CloudStatus>('/cloud/unbind', {
      json: code ? { passwd, code } : { passwd },
      ...fleetCall,
    }),
  );
}

/** For tests. */
export function resetCloudForTests(): void {
  if (pollTimer !== undefined) clearInterval(pollTimer);
  pollTimer = undefined;
  useCloud.setState(INITIAL, true);
}
