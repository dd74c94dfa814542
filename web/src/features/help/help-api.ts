/**
 * Help and logs (issue 12): log export, contact support, reset to defaults. The log zip and
 * the support form are not JSON, so these use fetch with the session token themselves.
 */
import { api, ApiError, buildApiUrl } from '../../lib/api';
import { getEmbed } from '../../lib/embed';
import { getAuthToken } from '../../lib/storage';

/** SPEC 5 help form rules. */
export const SUPPORT_MAX_IMAGES = 8;
/** SPEC's 10 MB: 10,000,000 bytes, as the server counts (server/src/services/support). */
export const SUPPORT_IMAGE_MAX_BYTES = 10_000_000;
export const SUPPORT_IMAGE_EXTENSIONS = /\.(jpe?g|gif|png)$/i;

export type SupportResult =
  { delivered: 'sent'; url: string } | { delivered: 'saved'; bundle: string };

async function send(path: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  const token = getAuthToken();
  if (token) headers.set('Token', token);
  const res = await fetch(buildApiUrl(path), { ...init, headers, credentials: 'same-origin' });
  if (!res.ok) {
    const body = (await res.json().catch(() => null)) as { result?: object } | null;
    throw new ApiError(res.status, (body?.result ?? {}) as Record<string, never>);
  }
  return res;
}

function fileNameOf(res: Response, fallback: string): string {
  const m = /filename=([^;]+)/.exec(res.headers.get('content-disposition') ?? '');
  return m?.[1]?.trim() ?? fallback;
}

/**
 * Downloads a file of the API: embedded, the host does it itself (SPEC 1 `download_file`);
 * otherwise it is fetched with the session and saved through a link.
 */
async function downloadApiFile(path: string, fallbackName: string): Promise<void> {
  const url = new URL(buildApiUrl(path), window.location.href).toString();
  if (getEmbed().requestDownload(url)) return;
  const res = await send(path);
  const blob = await res.blob();
  const href = URL.createObjectURL(blob);
  try {
    const a = document.createElement('a');
    a.href = href;
    a.download = fileNameOf(res, fallbackName);
    document.body.appendChild(a);
    a.click();
    a.remove();
  } finally {
    setTimeout(() => URL.revokeObjectURL(href), 10_000);
  }
}

/** "Export log files": `/api/upgrade/log`, the masked log zip. */
export function exportLogs(): Promise<void> {
  return downloadApiFile('/upgrade/log', 'system_logs.zip');
}

/** Support requests kept on the device (no support URL configured), newest first. */
export async function listSupportBundles(): Promise<Array<{ name: string; size: number }>> {
  const answer = await api.get<{ bundles: Array<{ name: string; size: number }> }>(
    '/support/bundles',
  );
  return answer.bundles;
}

export function downloadSupportBundle(name: string): Promise<void> {
  return downloadApiFile(`/support/bundles/${encodeURIComponent(name)}`, name);
}

/**
 * Sends the support form with XMLHttpRequest, whose upload events give the progress (fetch has
 * none); `onProgress` gets 0..100.
 */
export function submitSupport(
  message: string,
  contact: string,
  images: readonly File[],
  onProgress: (percent: number) => void = () => undefined,
): Promise<SupportResult> {
  const form = new FormData();
  form.set('message', message);
  form.set('contact', contact);
  images.forEach((file, i) => form.set(`image${i + 1}`, file, file.name));
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', buildApiUrl('/support/submit'));
    const token = getAuthToken();
    if (token) xhr.setRequestHeader('Token', token);
    xhr.upload.onprogress = (e) => {
      if (e.lengthComputable && e.total > 0) onProgress(Math.round((e.loaded / e.total) * 100));
    };
    xhr.onerror = () => reject(new Error('network'));
    xhr.ontimeout = () => reject(new Error('timeout'));
    xhr.onload = () => {
      let body: { result?: unknown } | null = null;
      try {
        body = JSON.parse(String(xhr.responseText)) as { result?: unknown };
      } catch {
        body = null;
      }
      if (xhr.status === 200 && body?.result) return resolve(body.result as SupportResult);
      reject(new ApiError(xhr.status, (body?.result ?? {}) as Record<string, never>));
    };
    xhr.send(form);
  });
}
