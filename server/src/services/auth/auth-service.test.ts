/**
 * Which changes of auth.json count as a change of credentials: the sockets opened with
 * X-KVMD header credentials close on those (app.ts), and only on those.
 */
import { describe, expect, it } from 'vitest';
import { tempDataDir } from '../../test-helpers';
import { AuthService } from './auth-service';
import { FAST_HASHER, TestClock } from './auth-test-kit';
import { totp } from './totp';

async function open(clock: TestClock): Promise<AuthService> {
  return AuthService.open(await tempDataDir(), {
    sessionExpireS: 3600,
    rateLimit: { max_failures: 10, window_s: 600, lock_s: 600 },
    trustedDeviceDays: 30,
    now: clock.now,
    passwords: FAST_HASHER,
  });
}

describe('AuthService credentialsChanged', () => {
  it('fires on a new password and on 2FA on or off, not on a remembered device', async () => {
    const clock = new TestClock();
    const auth = await open(clock);
    let changed = 0;
    let credentials = 0;
    auth.on('changed', () => (changed += 1));
    auth.on('credentialsChanged', () => (credentials += 1));

    await auth.init('first password');
    expect(credentials).toBe(1);
    await auth.changePassword('admin', 'first password', 'second password', null);
    expect(credentials).toBe(2);

    const { secret } = auth.createTwoFa();
    await auth.enableTwoFa(secret, totp(secret, clock.now()));
    expect(credentials).toBe(3);

    const before = changed;
    await auth.trustDevice();
    expect(changed).toBe(before + 1);
    expect(credentials).toBe(3);

    clock.advance(30_000); // a code is accepted once per step
    await auth.disableTwoFa(totp(secret, clock.now()), { ip: '127.0.0.1' });
    expect(credentials).toBe(4);
  });
});
