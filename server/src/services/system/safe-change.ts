/**
 * Safe network changes (issue 11, item 3; docs/system.md "Safe changes"): a change that could cut
 * the administrator off is applied, then kept only if confirmed within the window; otherwise the
 * previous configuration is applied again by itself, the pattern of routers and firewalls.
 *
 * One change at a time, Ethernet and Wi-Fi together: while one applies, waits for confirmation or
 * reverts, another answers 409 (an ExclusiveRegion while a step runs, the `waiting` state between
 * them). Every move between the states below is checked against SAFE_CHANGE_TRANSITIONS:
 *
 *   idle → applying → waiting → confirming → idle
 *              ↓          ↓  ↘ reverting  → idle   (revert, or the window ran out)
 *             idle       idle (dispose: the pending file stays for the next start)
 *
 * `applying` → `idle` is a change that needs no confirmation, or one whose apply failed.
 * Crash-safety: the change is written to a pending file before it
 * is applied, so a restart inside the window finds it and applies the previous settings again
 * (`recover`). The kept settings are saved by the caller's `keep` only on confirm.
 */
import { randomBytes } from 'node:crypto';
import { unlink } from 'node:fs/promises';
import { unmapIpv4, type PendingNetworkChange } from '@kvm/protocol';
import { checkTransition, type TransitionMap } from '@kvm/protocol/transitions';
import { IsBusyError, NotFoundError } from '../../errors';
import type { Logger } from '../../log';
import { JsonFile } from '../../storage/json-store';
import { ExclusiveRegion } from '../../sync/exclusive-region';

/** A second change while one applies or waits for confirmation. */
export class NetworkChangePendingError extends IsBusyError {
  static override readonly defaultMessage: string =
    'A network change is being applied or waits for confirmation: confirm or revert it first';
}

/** `confirm`/`revert` with an id that is not the pending change (expired, or never was). */
export class NetworkChangeNotFoundError extends NotFoundError {
  constructor() {
    super('No pending network change with this id (it was confirmed or reverted)');
  }
}

/** The timers a change waits with; tests pass their own. */
export interface SafeChangeClock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const SYSTEM_CLOCK: SafeChangeClock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => {
    const handle = setTimeout(fn, ms);
    handle.unref();
    return handle;
  },
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/** What the pending file holds: the public part plus what the owner needs to revert. */
export interface PendingRecord extends PendingNetworkChange {
  /** The owner's previous settings, handed back to its `revert` after a restart. */
  previous: unknown;
}

export interface SafeChangeSpec {
  kind: PendingNetworkChange['kind'];
  previous: unknown;
  previous_address: string | null;
  /** Applies the change; throws (leaving the previous settings) when it cannot. */
  apply(): Promise<void>;
  /** The address to reach the console at once applied (read after `apply`), or null. */
  newAddress(): Promise<string | null>;
  /** Makes the change the saved configuration (confirm). */
  keep(): Promise<void>;
  /** Applies the previous settings again (timeout or revert). */
  revert(): Promise<void>;
}

/** Where the one change in flight is (see the diagram above). */
export type SafeChangeState = 'idle' | 'applying' | 'waiting' | 'confirming' | 'reverting';

export const SAFE_CHANGE_TRANSITIONS: TransitionMap<SafeChangeState> = {
  idle: ['applying'],
  applying: ['idle', 'waiting'],
  waiting: ['confirming', 'reverting', 'idle'],
  confirming: ['idle'],
  reverting: ['idle'],
};

interface Active {
  record: PendingRecord;
  spec: SafeChangeSpec;
  timer: unknown;
  /** Host part of `new_address`, for the implicit confirm. */
  host: string | null;
}

export class SafeChanges {
  private readonly file: JsonFile<PendingRecord | null>;
  private current: SafeChangeState = 'idle';
  /** The change waiting for confirmation: set exactly while the state is `waiting`. */
  private active: Active | null = null;
  /** An apply, confirm or revert in progress: the next change waits for nothing, it is refused. */
  private readonly region = new ExclusiveRegion(() => new NetworkChangePendingError());

  constructor(
    private readonly opts: {
      pendingPath: string;
      timeoutS: number;
      log: Logger;
      clock?: SafeChangeClock;
    },
  ) {
    this.file = new JsonFile(opts.pendingPath, parsePending, { maxBytes: 64 * 1024 });
  }

  private get clock(): SafeChangeClock {
    return this.opts.clock ?? SYSTEM_CLOCK;
  }

  get state(): SafeChangeState {
    return this.current;
  }

  /** The change waiting for confirmation, or null. */
  pending(): PendingNetworkChange | null {
    if (!this.active) return null;
    const { previous: _previous, ...wire } = this.active.record;
    return wire;
  }

  /** Runs a change that needs no confirmation, under the same one-at-a-time rule. */
  exclusive<T>(fn: () => Promise<T>): Promise<T> {
    return this.applying(fn);
  }

  /**
   * Applies a risky change and starts its window. Answers the pending change; throws
   * NetworkChangePendingError while another one is under way, or what `apply` threw (the
   * pending file is then removed and nothing else changes).
   */
  run(spec: SafeChangeSpec): Promise<PendingNetworkChange> {
    return this.applying(async () => {
      const timeoutS = this.opts.timeoutS;
      const record: PendingRecord = {
        id: randomBytes(8).toString('hex'),
        kind: spec.kind,
        expires_at: 0,
        timeout_s: timeoutS,
        new_address: null,
        previous_address: spec.previous_address,
        previous: spec.previous,
      };
      // Written before the change, so a crash while applying still reverts at the next start.
      await this.file.save(record);
      try {
        await spec.apply();
      } catch (err) {
        await this.removeFile();
        throw err;
      }
      record.new_address = await spec.newAddress().catch(() => null);
      record.expires_at = this.clock.now() + timeoutS * 1000;
      await this.file.save(record);
      const timer = this.clock.setTimeout(() => void this.expire(record.id), timeoutS * 1000);
      this.active = { record, spec, timer, host: hostOf(record.new_address) };
      this.moveTo('waiting');
      this.opts.log.warn(
        { kind: spec.kind, id: record.id, new_address: record.new_address, timeout_s: timeoutS },
        'network change applied: reverts unless confirmed',
      );
      return this.pending()!;
    });
  }

  /** Keeps the pending change `id`. */
  async confirm(id: string): Promise<void> {
    const active = this.take(id, 'confirming');
    await this.step(async () => {
      await active.spec.keep();
      await this.removeFile();
      this.opts.log.info({ kind: active.record.kind, id }, 'network change confirmed');
    });
  }

  /** Reverts the pending change `id` at once. */
  async revert(id: string): Promise<void> {
    const active = this.take(id, 'reverting');
    await this.revertActive(active, 'reverted on request');
  }

  /**
   * A request reached the console at `localAddress` (the socket's own address): when that is the
   * pending change's new address, the console came back on it and the change is kept.
   */
  noteLocalAddress(localAddress: string | undefined): void {
    const active = this.active;
    if (!active || !active.host || !localAddress || this.current !== 'waiting') return;
    if (unmapIpv4(localAddress) !== active.host) return;
    this.confirm(active.record.id).catch((err: unknown) =>
      this.opts.log.error({ err }, 'network change: implicit confirm failed'),
    );
  }

  /**
   * At start: a pending file left by a restart inside the window means the change was never
   * confirmed. Calls `revert` with the previous settings it recorded, then removes the file.
   */
  async recover(revert: (record: PendingRecord) => Promise<void>): Promise<PendingRecord | null> {
    let record: PendingRecord | null;
    try {
      record = await this.file.load();
    } catch (err) {
      this.opts.log.error({ err }, 'network change: unreadable pending file, removed');
      await this.removeFile();
      return null;
    }
    if (!record) return null;
    try {
      await revert(record);
      this.opts.log.warn(
        { kind: record.kind, id: record.id },
        'network change was not confirmed before the restart: previous settings applied again',
      );
    } catch (err) {
      this.opts.log.error(
        { err, kind: record.kind },
        'network change: revert after restart failed',
      );
    }
    await this.removeFile();
    return record;
  }

  /** Stops the window's timer (app close); the pending file stays for the next start. */
  dispose(): void {
    if (!this.active) return;
    this.clock.clearTimeout(this.active.timer);
    this.active = null;
    this.moveTo('idle');
  }

  private async expire(id: string): Promise<void> {
    const active = this.active;
    // Not waiting any more: a confirm or revert is running, and it decides.
    if (!active || active.record.id !== id || this.current !== 'waiting') return;
    this.take(id, 'reverting');
    await this.revertActive(active, `not confirmed within ${active.record.timeout_s} s`).catch(
      () => undefined,
    );
  }

  private async revertActive(active: Active, why: string): Promise<void> {
    await this.step(async () => {
      try {
        await active.spec.revert();
        this.opts.log.warn(
          { kind: active.record.kind, id: active.record.id },
          `network change ${why}: previous settings applied again`,
        );
      } catch (err) {
        this.opts.log.error(
          { err, kind: active.record.kind },
          `network change ${why}: revert failed`,
        );
        throw err;
      } finally {
        await this.removeFile();
      }
    });
  }

  /** The waiting change `id`, out of its window and into `to` (confirming or reverting). */
  private take(id: string, to: 'confirming' | 'reverting'): Active {
    const active = this.active;
    if (!active || active.record.id !== id || this.current !== 'waiting') {
      throw new NetworkChangeNotFoundError();
    }
    this.clock.clearTimeout(active.timer);
    this.active = null;
    this.moveTo(to);
    return active;
  }

  /** `idle` → `applying` → `waiting` (when `fn` left a change waiting) or back to `idle`. */
  private applying<T>(fn: () => Promise<T>): Promise<T> {
    if (this.current !== 'idle') return Promise.reject(new NetworkChangePendingError());
    return this.region.enter(async () => {
      this.moveTo('applying');
      try {
        return await fn();
      } finally {
        if (this.current === 'applying') this.moveTo('idle');
      }
    });
  }

  /** A confirm or revert step (the state is `confirming` or `reverting`), then `idle`. */
  private step(fn: () => Promise<void>): Promise<void> {
    return this.region.enter(async () => {
      try {
        await fn();
      } finally {
        this.moveTo('idle');
      }
    });
  }

  private moveTo(to: SafeChangeState): void {
    if (checkTransition('SafeChanges', SAFE_CHANGE_TRANSITIONS, this.current, to)) {
      this.current = to;
    }
  }

  private async removeFile(): Promise<void> {
    await unlink(this.opts.pendingPath).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw err;
    });
  }
}

function parsePending(raw: unknown): PendingRecord | null {
  if (raw === undefined) return null;
  const r = raw as Partial<PendingRecord> | null;
  if (!r || typeof r.id !== 'string' || (r.kind !== 'ethernet' && r.kind !== 'wifi')) {
    throw new Error('not a pending network change');
  }
  return r as PendingRecord;
}

/** `https://10.0.0.2:443/` → `10.0.0.2`. */
function hostOf(url: string | null): string | null {
  if (!url) return null;
  try {
    return new URL(url).hostname.replace(/^\[|\]$/g, '');
  } catch {
    return null;
  }
}
