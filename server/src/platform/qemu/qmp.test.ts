import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  connectQmpWithRetry,
  QmpClient,
  QmpClosedError,
  QmpCommandError,
  QmpTimeoutError,
  type QmpEvent,
} from './qmp';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kvm-qmp-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A bare QEMU, CPU not started (-S): QMP needs no guest. */
function startQemu(sock: string): ChildProcess {
  return spawn(
    'qemu-system-x86_64',
    [
      ...['-machine', 'pc', '-accel', 'tcg', '-nodefaults', '-display', 'none', '-S'],
      ...['-qmp', `unix:${sock},server=on,wait=off`],
    ],
    { stdio: 'ignore' },
  );
}

function nextEvent(qmp: QmpClient, name: string, timeoutMs = 5000): Promise<QmpEvent> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${name} event`)), timeoutMs);
    const on = (e: QmpEvent): void => {
      if (e.event !== name) return;
      clearTimeout(timer);
      qmp.off('event', on);
      resolve(e);
    };
    qmp.on('event', on);
  });
}

describe('QmpClient against QEMU', () => {
  it('negotiates, runs commands, reports errors and events, closes', async () => {
    const sock = join(dir, 'qmp.sock');
    const qemu = startQemu(sock);
    try {
      const qmp = await connectQmpWithRetry(sock, 10_000);
      expect(qmp.version.qemu.major).toBeGreaterThanOrEqual(7);

      const version = await qmp.execute('query-version');
      expect(version).toEqual(qmp.version);
      expect(await qmp.execute('query-status')).toMatchObject({
        status: 'prelaunch',
        running: false,
      });

      const resumed = nextEvent(qmp, 'RESUME');
      const typed = new Promise<void>((resolve) => qmp.once('RESUME', () => resolve()));
      await qmp.execute('cont');
      await Promise.all([resumed, typed]);
      expect((await qmp.execute('query-status')).status).toBe('running');

      const stopped = nextEvent(qmp, 'STOP');
      await qmp.execute('stop');
      const stop = await stopped;
      expect(stop.timestamp.seconds).toBeGreaterThan(0);
      expect(await qmp.execute('query-status')).toMatchObject({ status: 'paused' });

      // Several commands in flight at once are matched to their answers by id.
      const many = await Promise.all([
        qmp.execute('query-status'),
        qmp.execute('query-version'),
        qmp.execute('query-status'),
      ]);
      expect(many.map((r) => ('status' in r ? r.status : 'version'))).toEqual([
        'paused',
        'version',
        'paused',
      ]);

      const unknown = await qmp.execute('no-such-command').catch((e: unknown) => e);
      expect(unknown).toBeInstanceOf(QmpCommandError);
      expect((unknown as QmpCommandError).qmpClass).toBe('CommandNotFound');
      const noDevice = await qmp.execute('eject', { device: 'nope' }).catch((e: unknown) => e);
      expect(noDevice).toMatchObject({ qmpClass: 'DeviceNotFound', command: 'eject' });

      const closed = new Promise<void>((resolve) => qmp.once('close', () => resolve()));
      const shutdown = nextEvent(qmp, 'SHUTDOWN');
      await qmp.execute('quit');
      expect((await shutdown).data).toMatchObject({ guest: false, reason: 'host-qmp-quit' });
      await closed;
      expect(qmp.isClosed).toBe(true);
      await expect(qmp.execute('query-status')).rejects.toBeInstanceOf(QmpClosedError);
    } finally {
      qemu.kill('SIGKILL');
    }
  });
});

describe('QmpClient against a fake server', () => {
  async function fake(
    onLine: (line: string, reply: (s: string) => void) => void,
  ): Promise<{ server: Server; path: string }> {
    const path = join(dir, `fake-${Math.random().toString(36).slice(2)}.sock`);
    const server = createServer((socket) => {
      socket.write(
        '{"QMP": {"version": {"qemu": {"micro": 0, "minor": 2, "major": 7}, "package": "fake"}, "capabilities": []}}\r\n',
      );
      let buf = '';
      socket.on('data', (d) => {
        buf += d.toString();
        let nl: number;
        while ((nl = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, nl);
          buf = buf.slice(nl + 1);
          onLine(line, (s) => socket.write(s));
        }
      });
    });
    await new Promise<void>((resolve) => server.listen(path, resolve));
    return { server, path };
  }

  it('times out a command with no answer, and drops the late answer', async () => {
    let held: ((s: string) => void) | null = null;
    let heldId = '';
    const { server, path } = await fake((line, reply) => {
      const msg = JSON.parse(line) as { execute: string; id: string };
      if (msg.execute === 'qmp_capabilities') reply(`{"return": {}, "id": "${msg.id}"}\n`);
      else if (msg.execute === 'slow') {
        held = reply;
        heldId = msg.id;
      } else reply(`{"return": {"ok": 1}, "id": "${msg.id}"}\n`);
    });
    try {
      const qmp = await QmpClient.connect(path);
      expect(qmp.version.package).toBe('fake');
      await expect(qmp.execute('slow', {}, { timeoutMs: 50 })).rejects.toBeInstanceOf(
        QmpTimeoutError,
      );
      held!(`{"return": {"late": true}, "id": "${heldId}"}\n`);
      expect(await qmp.execute('fast')).toEqual({ ok: 1 });
      qmp.close();
    } finally {
      server.close();
    }
  });

  it('rejects pending commands when the connection drops', async () => {
    const { server, path } = await fake((line, reply) => {
      const msg = JSON.parse(line) as { execute: string; id: string };
      if (msg.execute === 'qmp_capabilities') reply(`{"return": {}, "id": "${msg.id}"}\n`);
    });
    try {
      const qmp = await QmpClient.connect(path);
      const pending = qmp.execute('never');
      qmp.close();
      await expect(pending).rejects.toBeInstanceOf(QmpClosedError);
    } finally {
      server.close();
    }
  });
});
