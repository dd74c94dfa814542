/**
 * A child process of the video bench: N WebRTC viewers that do what janus.js does (create,
 * attach janus.plugin.ustreamer, watch, answer with start) with werift as the browser, and
 * receive the RTP without decoding it. Measuring the server's CPU per extra viewer with these
 * instead of Chromium pages keeps four decoders from saturating the two cores.
 * argv: <ws url of /janus/ws?auth_token=...> <count>. Prints "ready N" once all receive media.
 */
import WebSocket from 'ws';
import { weriftBrowserPeer } from '../server/src/janus/test-support';

type Msg = Record<string, unknown> & { janus: string };

class Janus {
  private seq = 0;
  private readonly waiters = new Map<string, (m: Msg) => void>();
  private readonly listeners: Array<(m: Msg) => void> = [];
  constructor(private readonly ws: WebSocket) {
    ws.on('message', (data) => {
      const m = JSON.parse(String(data)) as Msg;
      const t = m['transaction'];
      if (typeof t === 'string' && this.waiters.has(t)) {
        this.waiters.get(t)!(m);
        this.waiters.delete(t);
      } else this.listeners.forEach((l) => l(m));
    });
  }
  request(body: Record<string, unknown>): Promise<Msg> {
    const transaction = `b${++this.seq}`;
    return new Promise((resolve) => {
      this.waiters.set(transaction, resolve);
      this.ws.send(JSON.stringify({ ...body, transaction }));
    });
  }
  next(pred: (m: Msg) => boolean): Promise<Msg> {
    return new Promise((resolve) => {
      const l = (m: Msg): void => {
        if (!pred(m)) return;
        this.listeners.splice(this.listeners.indexOf(l), 1);
        resolve(m);
      };
      this.listeners.push(l);
    });
  }
}

async function viewer(url: string): Promise<void> {
  const ws = new WebSocket(url, 'janus-protocol');
  await new Promise((r) => ws.once('open', r));
  const j = new Janus(ws);
  const session = ((await j.request({ janus: 'create' }))['data'] as { id: number }).id;
  const handle = (
    (await j.request({ janus: 'attach', session_id: session, plugin: 'janus.plugin.ustreamer' }))[
      'data'
    ] as { id: number }
  ).id;
  setInterval(
    () => ws.send(JSON.stringify({ janus: 'keepalive', session_id: session, transaction: 'k' })),
    25_000,
  ).unref();
  const offer = j.next((m) => Boolean(m['jsep']));
  await j.request({
    janus: 'message',
    session_id: session,
    handle_id: handle,
    body: { request: 'watch', params: {} },
  });
  const sdp = ((await offer)['jsep'] as { sdp: string }).sdp;
  const peer = await weriftBrowserPeer(sdp, { keepRtp: false });
  await j.request({
    janus: 'message',
    session_id: session,
    handle_id: handle,
    body: { request: 'start' },
    jsep: { type: 'answer', sdp: peer.answer },
  });
  await peer.media;
}

const [url, count] = process.argv.slice(2);
await Promise.all(Array.from({ length: Number(count) }, () => viewer(url!)));
process.stdout.write(`ready ${count}\n`);
setInterval(() => undefined, 1 << 30);
