/**
 * File uploads with progress (SPEC 4 "Upload progress", SPEC 5 "Upload", SPEC 8 "Upload
 * errors"): a plain controller around XMLHttpRequest, whose upload progress events and abort()
 * fetch does not offer. The file goes as the request body as it is (the browser streams it and
 * sets Content-Length, which kvmd's /msd/write requires); it is never read into memory.
 *
 * Also here: the transfer snapshot and speed meter the URL download shares, and the checks a
 * file passes before it is sent.
 */
import { UPLOAD_SPEED_DISPLAY_CAP } from '@kvm/protocol/constants';
import type { ApiErrorResult } from '@kvm/protocol/envelope';
import type { MsdMode } from '@kvm/protocol/enums';
import type { MsdWriteResult } from '@kvm/protocol/msd';
import type { I18nKey } from '../../i18n/keys';
import { buildApiUrl } from '../../lib/api';
import { getAuthToken } from '../../lib/storage';
import { isIsoName } from './msd-store';

export type { MsdWriteResult };

export type TransferPhase = 'idle' | 'running' | 'done' | 'failed' | 'cancelled';

/** SPEC 8 upload errors: cancelled, image exists, no space, anything else. */
export type TransferFailure = 'cancelled' | 'exists' | 'noSpace' | 'invalidUrl' | 'failed';

export class TransferError extends Error {
  override readonly name = 'TransferError';
  readonly reason: TransferFailure;
  /** HTTP status; 0 when there was no answer. */
  readonly status: number;
  /** The server's error class and message, when it sent an envelope. */
  readonly error: string;
  readonly error_msg: string;

  constructor(reason: TransferFailure, status = 0, result: Partial<ApiErrorResult> = {}) {
    super(result.error_msg || reason);
    this.reason = reason;
    this.status = status;
    this.error = result.error ?? '';
    this.error_msg = result.error_msg ?? '';
  }
}

/** The failure an error answer of the server means. */
export function failureOf(status: number, error: string | undefined): TransferFailure {
  if (error === 'MsdImageExistsError') return 'exists';
  // GL answers 507 MsdNoSpaceError when the Content-Length exceeds the free space.
  if (error === 'MsdNoSpaceError' || status === 507) return 'noSpace';
  return 'failed';
}

/** SPEC 8: the text of each failure. */
export const TRANSFER_FAILURE_TEXT: Record<TransferFailure, I18nKey> = {
  cancelled: 'storage.upload.cancelled',
  exists: 'storage.upload.exists',
  noSpace: 'storage.upload.noSpace',
  invalidUrl: 'storage.download.invalidUrl',
  failed: 'storage.upload.failed',
};

export interface TransferSnapshot {
  phase: TransferPhase;
  /** The file's name (for a URL download: the image name the server reports). */
  name: string;
  loaded: number;
  total: number;
  /** 0 to 100, whole. */
  percent: number;
  /** Bytes per second as shown: the measured speed, capped (SPEC 9). */
  speed: number;
  /** Seconds left at the shown speed; null until there is a speed. */
  remainingS: number | null;
  error: TransferError | null;
}

export const IDLE_TRANSFER: TransferSnapshot = {
  phase: 'idle',
  name: '',
  loaded: 0,
  total: 0,
  percent: 0,
  speed: 0,
  remainingS: null,
  error: null,
};

/** Speed is measured over the last few seconds, so a stall shows soon. */
export const SPEED_WINDOW_MS = 3_000;

/**
 * Speed and remaining time from (time, bytes done) samples. The browser counts upload bytes as
 * they enter its socket buffer, so the first events claim absurd speeds: the shown speed is
 * capped at UPLOAD_SPEED_DISPLAY_CAP (SPEC 9), and the remaining time uses the shown speed.
 */
export class TransferMeter {
  private samples: Array<{ t: number; loaded: number }> = [];

  start(now: number): void {
    this.samples = [{ t: now, loaded: 0 }];
  }

  sample(
    loaded: number,
    total: number,
    now: number,
  ): Pick<TransferSnapshot, 'speed' | 'remainingS'> {
    this.samples.push({ t: now, loaded });
    // Keep the newest sample at or before the window's start, so the window is always full.
    while (this.samples.length > 2 && (this.samples[1]?.t ?? now) <= now - SPEED_WINDOW_MS) {
      this.samples.shift();
    }
    const first = this.samples[0] ?? { t: now, loaded };
    const elapsedMs = now - first.t;
    const measured = elapsedMs > 0 ? ((loaded - first.loaded) * 1000) / elapsedMs : 0;
    const speed = Math.min(Math.max(0, measured), UPLOAD_SPEED_DISPLAY_CAP);
    const left = Math.max(0, total - loaded);
    const remainingS = left === 0 ? 0 : speed > 0 ? left / speed : null;
    return { speed, remainingS };
  }
}

export function percentOf(loaded: number, total: number): number {
  if (total <= 0) return 0;
  return Math.min(100, Math.max(0, Math.floor((loaded * 100) / total)));
}

/** A snapshot plus subscribers, for useSyncExternalStore. */
export class TransferTask {
  protected snapshot: TransferSnapshot = IDLE_TRANSFER;
  private readonly listeners = new Set<() => void>();
  protected readonly meter = new TransferMeter();
  protected readonly now: () => number;

  constructor(now?: () => number) {
    this.now = now ?? (() => Date.now());
  }

  getSnapshot = (): TransferSnapshot => this.snapshot;

  subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  };

  isRunning(): boolean {
    return this.snapshot.phase === 'running';
  }

  /** Back to idle after a finished transfer (the panel's "dismiss"). */
  clear(): void {
    if (!this.isRunning()) this.set(IDLE_TRANSFER);
  }

  protected begin(name: string, total: number): void {
    if (this.isRunning()) throw new Error('A transfer is already running');
    this.meter.start(this.now());
    this.set({ ...IDLE_TRANSFER, phase: 'running', name, total });
  }

  protected progress(loaded: number, total: number, name = this.snapshot.name): void {
    if (!this.isRunning()) return;
    const { speed, remainingS } = this.meter.sample(loaded, total, this.now());
    this.set({
      ...this.snapshot,
      name,
      loaded,
      total,
      percent: percentOf(loaded, total),
      speed,
      remainingS,
    });
  }

  protected finish(): void {
    const { total } = this.snapshot;
    const loaded = Math.max(this.snapshot.loaded, total);
    this.set({ ...this.snapshot, phase: 'done', loaded, percent: 100, remainingS: 0 });
  }

  protected fail(error: TransferError): TransferError {
    const phase: TransferPhase = error.reason === 'cancelled' ? 'cancelled' : 'failed';
    this.set({ ...this.snapshot, phase, error, remainingS: null });
    return error;
  }

  protected set(snapshot: TransferSnapshot): void {
    this.snapshot = snapshot;
    for (const listener of [...this.listeners]) listener();
  }
}

/** The parts of XMLHttpRequest used here (tests pass a fake). */
export interface XhrLike {
  open(method: string, url: string): void;
  setRequestHeader(name: string, value: string): void;
  send(body: Blob | FormData): void;
  abort(): void;
  timeout: number;
  readonly status: number;
  readonly responseText: string;
  readonly upload: { onprogress: ((event: ProgressEvent) => void) | null };
  onload: ((event: ProgressEvent) => void) | null;
  onerror: ((event: ProgressEvent) => void) | null;
  onabort: ((event: ProgressEvent) => void) | null;
  ontimeout: ((event: ProgressEvent) => void) | null;
}

export interface UploadControllerOptions {
  createXhr?: () => XhrLike;
  now?: () => number;
}

function parseEnvelope(text: string): { ok?: unknown; result?: unknown } | null {
  try {
    const data = JSON.parse(text) as unknown;
    return typeof data === 'object' && data !== null ? data : null;
  } catch {
    return null;
  }
}

/**
 * One upload at a time, with progress, cancel and no timeout (SPEC 5: uploads have none).
 *
 *   idle ──send()──▶ running ──answer ok──▶ done
 *                      │ ├──error answer / network──▶ failed
 *                      │ └──cancel()──▶ cancelled
 *   done|failed|cancelled ──send()──▶ running
 */
export class UploadController extends TransferTask {
  private readonly createXhr: () => XhrLike;
  private xhr: XhrLike | null = null;
  private cancelCurrent: (() => void) | null = null;

  constructor(options: UploadControllerOptions = {}) {
    super(options.now);
    this.createXhr = options.createXhr ?? (() => new XMLHttpRequest());
  }

  /**
   * POSTs the body to an /api path; resolves with the envelope's result. `url` and `method`
   * send it elsewhere instead (the fleet console's `PUT /cloud-basic/v1/files/...`).
   */
  send<T>(
    path: string,
    body: Blob | FormData,
    info: {
      name: string;
      total: number;
      query?: Parameters<typeof buildApiUrl>[1];
      url?: string;
      method?: 'POST' | 'PUT';
    },
  ): Promise<T> {
    this.begin(info.name, info.total);
    const xhr = this.createXhr();
    this.xhr = xhr;
    return new Promise<T>((resolve, reject) => {
      const settle = (error: TransferError | null, result?: unknown) => {
        if (this.xhr !== xhr) return;
        this.xhr = null;
        this.cancelCurrent = null;
        if (error) {
          reject(this.fail(error));
        } else {
          this.finish();
          resolve(result as T);
        }
      };
      xhr.open(info.method ?? 'POST', info.url ?? buildApiUrl(path, info.query));
      xhr.timeout = 0;
      xhr.setRequestHeader('Accept', 'application/json');
      // A raw body is bytes whatever the file's type; FormData sets its own boundary.
      if (!(body instanceof FormData)) {
        xhr.setRequestHeader('Content-Type', 'application/octet-stream');
      }
      const token = getAuthToken();
      if (token) xhr.setRequestHeader('Token', token);
      xhr.upload.onprogress = (event) => {
        if (this.xhr !== xhr) return;
        const total = event.lengthComputable && event.total > 0 ? event.total : info.total;
        this.progress(Math.min(event.loaded, total), total);
      };
      xhr.onload = () => {
        const data = parseEnvelope(xhr.responseText);
        const okStatus = xhr.status >= 200 && xhr.status < 300;
        if (okStatus && data?.ok === true) {
          settle(null, data.result);
          return;
        }
        const result = (data?.result ?? {}) as Partial<ApiErrorResult>;
        settle(new TransferError(failureOf(xhr.status, result.error), xhr.status, result));
      };
      xhr.onerror = () => settle(new TransferError('failed'));
      xhr.ontimeout = () => settle(new TransferError('failed'));
      xhr.onabort = () => settle(new TransferError('cancelled'));
      this.cancelCurrent = () => settle(new TransferError('cancelled'));
      xhr.send(body);
    });
  }

  /** Aborts the running upload; its promise rejects with reason 'cancelled'. */
  cancel(): void {
    const cancel = this.cancelCurrent;
    this.xhr?.abort();
    // Settles even where abort() fires no event (a request that has not started sending).
    cancel?.();
  }
}

/**
 * Uploads a file into the storage partition under its own name (wire-protocol.md 1.6):
 * remove_incomplete=1 makes the server delete what a failed or cancelled upload left.
 */
export function uploadMsdImage(controller: UploadController, file: File): Promise<MsdWriteResult> {
  return controller.send<MsdWriteResult>('/msd/write', file, {
    name: file.name,
    total: file.size,
    query: { image: file.name, prefix: '', remove_incomplete: true },
  });
}

/** Why a file is refused before the upload starts (SPEC 5). */
export type UploadRefusal = 'directory' | 'type' | 'exists' | 'noSpace';

export const UPLOAD_REFUSAL_TEXT: Record<UploadRefusal, I18nKey> = {
  directory: 'storage.upload.directory',
  type: 'storage.upload.wrongType',
  exists: 'storage.upload.exists',
  noSpace: 'storage.upload.noSpace',
};

export interface UploadCheckContext {
  mode: MsdMode;
  /** Free bytes of the storage partition; null when unknown (the server checks again). */
  free: number | null;
  /** Names already in the storage, complete or not. */
  existing: ReadonlySet<string>;
  isDirectory: boolean;
}

/**
 * SPEC 5: no directories; in image mounting mode only .iso, .img or .bin (file sharing takes any
 * file); no name that exists already; the file must fit the free space.
 */
export function checkUpload(
  file: { name: string; size: number },
  context: UploadCheckContext,
): UploadRefusal | null {
  if (context.isDirectory) return 'directory';
  if (context.mode === 'cdrom' && !isIsoName(file.name)) return 'type';
  if (context.existing.has(file.name)) return 'exists';
  if (context.free !== null && file.size > context.free) return 'noSpace';
  return null;
}

/** What a dropped item says about itself (DataTransferItem.webkitGetAsEntry()). */
export interface EntryLike {
  isDirectory: boolean;
}

/**
 * Whether a picked or dropped "file" is a folder. A drop's entry knows; without one, browsers
 * hand a folder over as a File with no type and size 0 (Chromium, Firefox) or the folder's
 * block size (Safari), which cannot be read: a one-byte read tells.
 */
export async function isDirectory(file: File, entry?: EntryLike | null): Promise<boolean> {
  if (entry) return entry.isDirectory;
  if (file.type !== '' || (file.size !== 0 && file.name.includes('.'))) return false;
  try {
    await file.slice(0, 1).arrayBuffer();
    return false;
  } catch {
    return true;
  }
}

/** The console's one MSD upload, kept while the panel is closed. */
export const msdUploader = new UploadController();
