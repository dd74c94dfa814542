/**
 * scripts/cloud/engines.mjs: each engine starts on loopback, answers, and stops leaving nothing.
 */
import { createSocket } from 'node:dgram';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { connect as tcpConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as natsConnect, StringCodec } from 'nats';
import nodemailer from 'nodemailer';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import {
  startCoturn,
  startNats,
  startPostgres,
  startSmtpSink,
  stopAll,
} from '../../scripts/cloud/engines.mjs';

afterAll(() => stopAll());

/** A STUN Binding request (RFC 5389): type 0x0001, length 0, magic cookie, 12-byte id. */
function stunBinding(): Buffer {
  const b = Buffer.alloc(20);
  b.writeUInt16BE(0x0001, 0);
  b.writeUInt16BE(0, 2);
  b.writeUInt32BE(0x2112a442, 4);
  randomBytes(12).copy(b, 8);
  return b;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('engines', () => {
  it('PostgreSQL: initdb as postgres, serves the fleet database, keeps data across a restart, stops', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kvm-pg-test-'));
    chmodSync(dir, 0o755); // the postgres user must reach the data folder under it
    try {
      const a = await startPostgres({ dir: join(dir, 'pg') });
      expect(a.url).toMatch(/^postgres:\/\/postgres@127\.0\.0\.1:\d+\/fleet$/);
      const c1 = new pg.Client({ connectionString: a.url });
      await c1.connect();
      const who = await c1.query('SELECT current_database() AS db, current_setting($1) AS v', [
        'server_version_num',
      ]);
      expect(who.rows[0].db).toBe('fleet');
      expect(Number(who.rows[0].v)).toBeGreaterThanOrEqual(150000);
      await c1.query('CREATE TABLE kept (v text)');
      await c1.query("INSERT INTO kept VALUES ('still here')");
      await c1.end();
      await a.stop();
      await expect(
        new Promise((res, rej) => {
          const s = tcpConnect(a.port, '127.0.0.1');
          s.once('connect', () => {
            s.destroy();
            res('open');
          });
          s.once('error', rej);
        }),
      ).rejects.toThrow(/ECONNREFUSED/);

      const b = await startPostgres({ dir: join(dir, 'pg') });
      const c2 = new pg.Client({ connectionString: b.url });
      await c2.connect();
      expect((await c2.query('SELECT v FROM kept')).rows).toEqual([{ v: 'still here' }]);
      await c2.end();
      await b.stop();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('PostgreSQL without a dir uses a temporary folder and removes it on stop', async () => {
    const e = await startPostgres();
    expect(existsSync(join(e.dir, 'PG_VERSION'))).toBe(true);
    await e.stop();
    expect(existsSync(e.dir)).toBe(false);
  });

  it('NATS: publish and subscribe on loopback, stops on SIGTERM', async () => {
    const e = await startNats();
    const nc = await natsConnect({ servers: e.url });
    const sc = StringCodec();
    const sub = nc.subscribe('engines.test', { max: 1 });
    const got = (async () => {
      for await (const m of sub) return sc.decode(m.data);
      return null;
    })();
    nc.publish('engines.test', sc.encode('hello'));
    expect(await got).toBe('hello');
    await nc.close();
    await e.stop();
  });

  it('coturn: answers STUN over UDP and TCP, asks unauthenticated allocations for credentials', async () => {
    const e = await startCoturn({ allowLoopbackPeers: true, relayPorts: 16 });
    expect(e.uris).toEqual([
      `turn:127.0.0.1:${e.port}?transport=udp`,
      `turn:127.0.0.1:${e.port}?transport=tcp`,
    ]);
    const udp = createSocket('udp4');
    const answer = await new Promise<Buffer>((res, rej) => {
      const t = setTimeout(() => rej(new Error('no STUN answer over UDP')), 10_000);
      udp.on('message', (m) => {
        clearTimeout(t);
        res(m);
      });
      const send = () => udp.send(stunBinding(), e.port, '127.0.0.1');
      send();
      // UDP may drop one on a loaded machine: resend until answered
      const again = setInterval(send, 500);
      udp.once('message', () => clearInterval(again));
    });
    udp.close();
    expect(answer.readUInt16BE(0)).toBe(0x0101); // Binding success response

    // An Allocate (0x0003) without credentials: 401 Unauthorized (use-auth-secret is on).
    const alloc = stunBinding();
    alloc.writeUInt16BE(0x0003, 0);
    const transport = Buffer.from([0x00, 0x19, 0x00, 0x04, 17, 0, 0, 0]); // REQUESTED-TRANSPORT udp
    alloc.writeUInt16BE(transport.length, 2);
    const tcpAnswer = await new Promise<Buffer>((res, rej) => {
      const s = tcpConnect(e.port, '127.0.0.1', () => s.write(Buffer.concat([alloc, transport])));
      let buf = Buffer.alloc(0);
      s.on('data', (d) => {
        buf = Buffer.concat([buf, d]);
        if (buf.length >= 20 && buf.length >= 20 + buf.readUInt16BE(2)) {
          s.destroy();
          res(buf);
        }
      });
      s.once('error', rej);
      setTimeout(() => rej(new Error('no answer over TCP')), 10_000);
    });
    expect(tcpAnswer.readUInt16BE(0)).toBe(0x0113); // Allocate error response
    const errAttr = tcpAnswer.indexOf(Buffer.from([0x00, 0x09]), 20); // ERROR-CODE
    expect(errAttr).toBeGreaterThan(0);
    expect(tcpAnswer[errAttr + 6]! * 100 + tcpAnswer[errAttr + 7]!).toBe(401);
    await e.stop();
  });

  it('SMTP sink: keeps what nodemailer sends, waitFor hands each mail out once', async () => {
    const sink = await startSmtpSink();
    const t = nodemailer.createTransport({
      host: sink.host,
      port: sink.port,
      secure: false,
      ignoreTLS: true,
    });
    await t.sendMail({
      from: 'fleet@kvm.test',
      to: 'Alice@Example.com',
      subject: 'Your code',
      text: 'code 123456',
    });
    const m = await sink.waitFor('alice@example.com', 5000);
    expect(m.subject).toBe('Your code');
    expect(m.text).toContain('code 123456');
    expect(m.from).toBe('fleet@kvm.test');
    await expect(sink.waitFor('alice@example.com', 300)).rejects.toThrow(/no mail/);
    const later = sink.waitFor('alice@example.com', 5000);
    await t.sendMail({
      from: 'fleet@kvm.test',
      to: 'alice@example.com',
      subject: 'Two',
      text: 'x',
    });
    expect((await later).subject).toBe('Two');
    expect(sink.mails()).toHaveLength(2);
    t.close();
    await sink.stop();
  });

  it('a parent killed with -9 takes its engines with it', async () => {
    const { spawn } = await import('node:child_process');
    const script = `import { startNats, startCoturn } from ${JSON.stringify(
      new URL('../../scripts/cloud/engines.mjs', import.meta.url).pathname,
    )};
const n = await startNats(); const c = await startCoturn();
console.log(JSON.stringify({ ports: [n.port, c.port] }));
setInterval(() => {}, 1000);`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const line = await new Promise<string>((res, rej) => {
      let out = '';
      child.stdout.on('data', (d) => {
        out += d;
        if (out.includes('\n')) res(out.split('\n')[0]!);
      });
      child.once('exit', () => rej(new Error('parent exited early')));
    });
    const { ports } = JSON.parse(line) as { ports: number[] };
    child.kill('SIGKILL');
    // Poll (a loaded machine takes a moment): nothing listens on their ports any more.
    const deadline = Date.now() + 15_000;
    const listening = (p: number) =>
      new Promise<boolean>((res) => {
        const s = tcpConnect(p, '127.0.0.1');
        s.once('connect', () => {
          s.destroy();
          res(true);
        });
        s.once('error', () => res(false));
      });
    for (;;) {
      const open = await Promise.all(ports.map(listening));
      if (!open.some(Boolean)) break;
      if (Date.now() > deadline) throw new Error(`still listening: ${ports}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    // the parent itself: gone once reaped (a zombie still answers kill(pid, 0))
    if (child.exitCode === null && child.signalCode === null) {
      await new Promise((r) => child.once('exit', r));
    }
    expect(child.signalCode).toBe('SIGKILL');
    expect(alive(child.pid!)).toBe(false);
  });
});
