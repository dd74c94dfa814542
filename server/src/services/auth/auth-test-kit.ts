/**
 * Test helpers of the auth suites (not shipped): an app whose auth service has a clock the test
 * moves and a password hash the test counts or holds.
 */
import { createHash } from 'node:crypto';
import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import pino, { type Logger as PinoLogger } from 'pino';
import { buildApp, createContext } from '../../app';
import { buildConfig } from '../../config';
import { loadConfigDefaults } from '../../paths';
import { tempDataDir } from '../../test-helpers';
import { AuthService, type PasswordHasher } from './auth-service';
import type { HashGateOptions } from './hash-gate';
import { hashPassword, verifyPassword } from './passwords';

/** A clock a test moves by hand; starts at the real time. */
export class TestClock {
  t = Date.now();
  readonly now = (): number => this.t;
  advance(ms: number): void {
    this.t += ms;
  }
}

/**
 * The real scrypt hash, counting verifications. While `hold()` is on, each verification waits
 * for `release()` before it hashes, so a test can see how many run at once.
 */
export class CountingHasher implements PasswordHasher {
  verifications = 0;
  running = 0;
  maxRunning = 0;
  private gate: Promise<void> | null = null;
  private open: (() => void) | null = null;

  hold(): void {
    this.gate = new Promise((resolve) => {
      this.open = resolve;
    });
  }

  release(): void {
    this.open?.();
    this.gate = null;
    this.open = null;
  }

  hash(password: string): Promise<string> {
    return hashPassword(password);
  }

  async verify(password: string, stored: string): Promise<boolean> {
    this.verifications += 1;
    this.running += 1;
    this.maxRunning = Math.max(this.maxRunning, this.running);
    try {
      if (this.gate) await this.gate;
      return await verifyPassword(password, stored);
    } finally {
      this.running -= 1;
    }
  }
}

/** A logger whose lines the test reads back, parsed. */
export class LogSink {
  readonly lines: Array<Record<string, unknown>> = [];
  readonly logger: PinoLogger;

  constructor(level = 'debug') {
    const stream = new Writable({
      write: (chunk: Buffer, _enc, done) => {
        for (const line of chunk.toString('utf8').split('\n')) {
          if (line) this.lines.push(JSON.parse(line) as Record<string, unknown>);
        }
        done();
      },
    });
    this.logger = pino({ level }, stream);
  }

  /** Lines with this message. */
  find(msg: string): Array<Record<string, unknown>> {
    return this.lines.filter((l) => l['msg'] === msg);
  }

  get text(): string {
    return this.lines.map((l) => JSON.stringify(l)).join('\n');
  }
}

/** A cheap stand-in for scrypt, for tests that log in many times and test something else. */
export const FAST_HASHER: PasswordHasher = {
  hash: (password) =>
    Promise.resolve(`sha256$${createHash('sha256').update(password).digest('hex')}`),
  verify: (password, stored) =>
    Promise.resolve(stored === `sha256$${createHash('sha256').update(password).digest('hex')}`),
};

export interface AuthAppOptions {
  dataDir?: string;
  overrides?: Record<string, unknown>;
  clock?: TestClock;
  passwords?: PasswordHasher;
  hashGate?: HashGateOptions;
  log?: LogSink;
}

export async function newAuthApp(opts: AuthAppOptions = {}): Promise<FastifyInstance> {
  const dataDir = opts.dataDir ?? (await tempDataDir());
  const config = buildConfig(
    { data_dir: dataDir, target: 'testbed', webrtc: { stun_url: null }, ...opts.overrides },
    loadConfigDefaults(),
  );
  const ctx = await createContext(config, '0.0.0-test', opts.log?.logger);
  ctx.auth = await AuthService.open(dataDir, {
    sessionExpireS: config.auth.session_expire_s,
    rateLimit: config.auth.rate_limit,
    trustedDeviceDays: config.auth.trusted_device_days,
    now: opts.clock?.now,
    passwords: opts.passwords,
    hashGate: opts.hashGate,
    log: opts.log?.logger,
  });
  return buildApp(ctx, opts.log ? { logger: opts.log.logger } : {});
}
