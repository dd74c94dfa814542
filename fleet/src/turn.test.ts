/**
 * TURN REST credentials against a real coturn (scripts/cloud/engines.mjs): turnutils_uclient
 * allocates with them and relays to a second allocation (client-to-client, loopback peers
 * allowed for the test only); a wrong password or an expired username gets no allocation.
 */
import { execFile } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCoturn } from '../../scripts/cloud/engines.mjs';
import { turnCredentials, turnRenewMs } from './turn';

type Coturn = Awaited<ReturnType<typeof startCoturn>>;
let coturn: Coturn;

beforeAll(async () => {
  coturn = await startCoturn({ allowLoopbackPeers: true });
});
afterAll(() => coturn?.stop());

/** Runs turnutils_uclient: one client-to-client exchange of 4 messages; its output. */
function uclient(user: string, pass: string, tcp: boolean): Promise<string> {
  const args = [
    '-p',
    String(coturn.port),
    '-u',
    user,
    '-w',
    pass,
    '-n',
    '4',
    '-m',
    '1',
    '-l',
    '64',
  ];
  if (tcp) args.push('-t');
  args.push('-y', '127.0.0.1');
  return new Promise((resolve) => {
    execFile('turnutils_uclient', args, { timeout: 25_000 }, (_err, stdout, stderr) =>
      resolve(`${stdout}\n${stderr}`),
    );
  });
}

function received(out: string): number {
  const m = /tot_recv_msgs=(\d+)/.exec(out.split('\n').reverse().join('\n'));
  return m ? Number(m[1]) : 0;
}

describe('turnCredentials', () => {
  it('is null without TURN, and follows the TURN REST format', () => {
    expect(turnCredentials(null, 'd1')).toBeNull();
    const t = turnCredentials({ secret: 'k', uris: ['turn:h:3478'], ttl_s: 600 }, 'a:b', 1_000_000);
    expect(t).toEqual({
      uris: ['turn:h:3478'],
      username: '1600:a_b',
      // base64(HMAC-SHA1("k", "1600:a_b")), computed apart with openssl dgst -sha1 -hmac k
      password: 'QP3asddmRkmBEbMLssqjE3FTTUk=',
      ttl: 600,
    });
    expect(turnRenewMs(t!)).toBe(450_000);
  });

  it.each([
    ['udp', false],
    ['tcp', true],
  ])(
    'coturn accepts them over %s and refuses a wrong or expired one',
    async (_n, tcp) => {
      const cfg = { secret: coturn.secret, uris: coturn.uris, ttl_s: 300 };
      const good = turnCredentials(cfg, 'dev-1')!;
      const ok = await uclient(good.username, good.password, tcp);
      expect(ok).not.toMatch(/Cannot complete Allocation/);
      expect(received(ok)).toBeGreaterThan(0);

      const forged = turnCredentials({ ...cfg, secret: `not-${coturn.secret}` }, 'dev-1')!;
      const wrong = await uclient(good.username, forged.password, tcp);
      expect(wrong).toMatch(/Cannot complete Allocation/);
      expect(received(wrong)).toBe(0);

      // Made an hour ago with a 60 s life: expired for coturn.
      const old = turnCredentials({ ...cfg, ttl_s: 60 }, 'dev-1', Date.now() - 3_600_000)!;
      const expired = await uclient(old.username, old.password, tcp);
      expect(expired).toMatch(/Cannot complete Allocation/);
    },
    90_000,
  );
});
