/**
 * An upload to the fleet (`PUT files/:kind/:name`, the raw body): XMLHttpRequest, since fetch
 * reports no upload progress. Resolves with the FleetFile, rejects with the console's ApiError.
 */
import type { FleetFile } from '@kvm/protocol/fleet';
import { ApiError, NetworkError, fleetUrl } from './api';

export function uploadFile(
  kind: FleetFile['kind'],
  file: Blob & { name: string },
  onProgress: (fraction: number) => void,
  xhrFactory: () => XMLHttpRequest = () => new XMLHttpRequest(),
): { done: Promise<FleetFile>; abort: () => void } {
  const xhr = xhrFactory();
  const done = new Promise<FleetFile>((resolve, reject) => {
    xhr.open('PUT', fleetUrl(`files/${kind}/${encodeURIComponent(file.name)}`));
    xhr.setRequestHeader('content-type', 'application/octet-stream');
    xhr.upload.onprogress = (ev) => {
      if (ev.lengthComputable && ev.total > 0) onProgress(ev.loaded / ev.total);
    };
    xhr.onerror = () => reject(new NetworkError('network'));
    xhr.onabort = () => reject(new NetworkError('aborted'));
    xhr.onload = () => {
      let j: { ok?: boolean; result?: unknown } | null = null;
      try {
        j = JSON.parse(String(xhr.responseText)) as { ok?: boolean; result?: unknown };
      } catch {
        j = null;
      }
      if (xhr.status === 200 && j?.ok) resolve(j.result as FleetFile);
      else reject(new ApiError(xhr.status, (j?.result ?? {}) as Record<string, string>));
    };
    xhr.send(file);
  });
  return { done, abort: () => xhr.abort() };
}
