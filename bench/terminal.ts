/**
 * `npm run bench -- terminal`: the device shell's echo over ttyd's socket (issue 12's figure
 * `terminal_echo_ms`, key to echoed character, p50 <= 20). The built server in a process of its
 * own (testbed target), a Node ws client on `/extras/webterm/ttyd/ws` with a session cookie,
 * bash -l in the pty. Each sample: one printable character sent as an INPUT frame, timed until
 * an OUTPUT frame holding it arrives (readline's echo); then a backspace, waited for, untimed.
 * Prints {"terminal_echo_ms": p50, "terminal_echo_p95_ms", "samples"}.
 */
import WebSocket from 'ws';
import { ServerProcess } from '../e2e/fixtures/server';
import { median, note, percentile, round, shortMark, sized } from './lib';

const PASSWORD = 'benchpass';
const SAMPLES = sized(300, 50);

async function login(server: ServerProcess): Promise<string> {
  await fetch(`${server.url}/api/init/init?password=${PASSWORD}`);
  const res = await fetch(`${server.url}/api/auth/login`, {
    method: 'POST',
    body: new URLSearchParams({ user: 'admin', passwd: PASSWORD }),
  });
  return ((await res.json()) as { result: { token: string } }).result.token;
}

const server = await ServerProcess.start({ target: 'testbed' });
try {
  const token = await login(server);
  const ws = new WebSocket(`${server.url.replace(/^http/, 'ws')}/extras/webterm/ttyd/ws`, ['tty'], {
    headers: { cookie: `auth_token=${token}` },
  });
  let waiter: ((text: string) => boolean) | null = null;
  let resolveWait: (() => void) | null = null;
  ws.on('message', (d: Buffer) => {
    if (d[0] !== 0x30 || !waiter) return;
    if (waiter(d.subarray(1).toString('latin1'))) {
      waiter = null;
      resolveWait?.();
    }
  });
  const until = (pred: (text: string) => boolean, ms = 5_000): Promise<void> =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no echo in time')), ms);
      waiter = pred;
      resolveWait = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  await new Promise((r, j) => {
    ws.once('open', r);
    ws.once('error', j);
  });
  ws.send(JSON.stringify({ AuthToken: '', columns: 120, rows: 40 }));
  // the login shell is ready once it runs a command
  const ready = until((t) => t.includes('bench-ready-42'), 15_000);
  ws.send(Buffer.from('0echo bench-ready-$((6*7))\r'));
  await ready;
  const times: number[] = [];
  for (let i = 0; i < SAMPLES; i += 1) {
    const c = String.fromCharCode(97 + (i % 26));
    const echoed = until((t) => t.includes(c));
    const t0 = performance.now();
    ws.send(Buffer.from(`0${c}`));
    await echoed;
    times.push(performance.now() - t0);
    const erased = until(() => true);
    ws.send(Buffer.from('0\x7f'));
    await erased;
  }
  ws.close();
  note(
    `terminal echo: min ${round(Math.min(...times), 2)} ms, max ${round(Math.max(...times), 2)} ms`,
  );
  process.stdout.write(
    `${JSON.stringify({
      ...shortMark(),
      terminal_echo_ms: round(median(times), 2),
      terminal_echo_p95_ms: round(percentile(times, 95), 2),
      samples: times.length,
    })}\n`,
  );
} finally {
  await server.dispose();
}
