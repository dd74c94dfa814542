/** XMLHttpRequest for the upload tests: records what is sent; the test plays the network. */
import type { XhrLike } from '../features/storage/upload';

export class FakeXhr implements XhrLike {
  /** The request made last (null after a test resets it). */
  static last: FakeXhr | null = null;
  method = '';
  url = '';
  headers: Record<string, string> = {};
  body: Blob | FormData | null = null;
  aborted = false;
  timeout = -1;
  status = 0;
  responseText = '';
  readonly upload: XhrLike['upload'] = { onprogress: null };
  onload: XhrLike['onload'] = null;
  onerror: XhrLike['onerror'] = null;
  onabort: XhrLike['onabort'] = null;
  ontimeout: XhrLike['ontimeout'] = null;

  constructor() {
    FakeXhr.last = this;
  }
  open(method: string, url: string) {
    this.method = method;
    this.url = url;
  }
  setRequestHeader(name: string, value: string) {
    this.headers[name] = value;
  }
  send(body: Blob | FormData) {
    this.body = body;
  }
  abort() {
    this.aborted = true;
    this.onabort?.(new ProgressEvent('abort'));
  }
  // The network's side.
  progress(loaded: number, total: number) {
    this.upload.onprogress?.(
      new ProgressEvent('progress', { loaded, total, lengthComputable: true }),
    );
  }
  answer(status: number, body: unknown) {
    this.status = status;
    this.responseText = JSON.stringify(body);
    this.onload?.(new ProgressEvent('load'));
  }
}
