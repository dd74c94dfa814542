/**
 * The device shell's echo over ttyd's socket (issue 12's figure `terminal_echo_ms`, key to
 * echoed character, p50 <= 20), measured against a running server (testbed target): a Node ws
 * client on `/extras/webterm/ttyd/ws` with a session cookie, bash -l in the pty. Each sample:
 * one printable character sent as an INPUT frame, timed until an OUTPUT frame holding it
 * arrives (readline's echo); then a backspace, waited for, untimed.
 *
 * bench/upgrade.ts reports it with its other figures; `npm run bench -- terminal` runs this
 * part alone and prints {"terminal_echo_ms": p50, "terminal_echo_p95_ms", "terminal_echo_samples"}.
 */
import WebSocket from 'ws';
import { ServerProcess } from '../e2e/fixtures/server';
import { initAndLogin, median, note, percentile, round, runMarks, sized } from './lib';

export const TERMINAL_SAMPLES = sized(300, 50);

/** Initialises a fresh server with `password` and logs in: the session token. */
export function benchLogin(server: ServerProcess, password: string): Promise<string> {
  return initAndLogin(server.url, password);
}

/** `samples` echo times (ms) of the device shell behind `server`, logged in with `token`. */
export async function terminalEchoTimes(
  server: ServerProcess,
  token: string,
  samples = TERMINAL_SAMPLES,
): Promise<number[]> {
  const ws = new WebSocket(`${server.url.replace(/^http/, 'ws')}/extras/webterm/ttyd/ws`, ['tty'], {
    headers: { cookie: `auth_token=${token}` },
  });
  try {
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
    for (let i = 0; i < samples; i += 1) {
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
    note(
      `terminal echo: min ${round(Math.min(...times), 2)} ms, max ${round(Math.max(...times), 2)} ms`,
    );
    return times;
  } finally {
    ws.close();
  }
}

/** The JSON fields of the echo times. */
export function terminalFields(times: number[]): Record<string, number> {
  return {
    terminal_echo_ms: round(median(times), 2),
    terminal_echo_p95_ms: round(percentile(times, 95), 2),
    terminal_echo_samples: times.length,
  };
}

// `npm run bench -- terminal`: this part alone.
if (process.argv[1]?.endsWith('terminal.mjs')) {
  const server = await ServerProcess.start({ target: 'testbed' });
  try {
    const times = await terminalEchoTimes(server, await benchLogin(server, 'benchpass'));
    process.stdout.write(`${JSON.stringify({ ...runMarks(), ...terminalFields(times) })}\n`);
  } finally {
    await server.dispose();
  }
}
