/** Shared by the ATX, GPIO and Redfish tests (not shipped): a recording ATX driver and its app. */
import type { FastifyInstance } from 'fastify';
import { buildApp, createContext } from '../../app';
import { buildConfig } from '../../config';
import type { AtxButton, AtxDriver, AtxDriverState } from '../../drivers/atx/types';
import { loadConfigDefaults } from '../../paths';
import { tempDataDir } from '../../test-helpers';
import { AtxService } from './atx-service';

/**
 * An ATX driver that records its presses. With `hold` (the default) a press lasts until the test
 * calls `finish()`; without, it ends at once. `power = on` sets the LED quietly, `setPower(on)`
 * tells the listeners too.
 */
export class FakeAtx implements AtxDriver {
  readonly name = 'fake';
  pressed: AtxButton[] = [];
  leds = { power: false, hdd: false };
  private release: (() => void) | null = null;
  private readonly listeners = new Set<(s: AtxDriverState) => void>();

  constructor(private readonly opts: { hold?: boolean } = {}) {}

  get power(): boolean {
    return this.leds.power;
  }
  set power(on: boolean) {
    this.leds.power = on;
  }
  getState(): AtxDriverState {
    return { enabled: true, leds: { ...this.leds } };
  }
  onState(l: (s: AtxDriverState) => void): () => void {
    this.listeners.add(l);
    return () => this.listeners.delete(l);
  }
  setPower(on: boolean): void {
    this.leds.power = on;
    this.listeners.forEach((l) => l(this.getState()));
  }
  click(button: AtxButton): Promise<void> {
    this.pressed.push(button);
    if (this.opts.hold === false) return Promise.resolve();
    return new Promise((r) => (this.release = r));
  }
  finish(): void {
    this.release?.();
  }
  async init(): Promise<void> {}
  async dispose(): Promise<void> {}
}

/** The testbed app over a new data folder with `atx` as its ATX driver; `config` merges in. */
export async function appWithAtx(
  atx: FakeAtx | undefined,
  config: Record<string, unknown> = {},
): Promise<FastifyInstance> {
  const cfg = buildConfig(
    { data_dir: await tempDataDir(), target: 'testbed', webrtc: { stun_url: null }, ...config },
    loadConfigDefaults(),
  );
  const ctx = await createContext(cfg, '0.0.0-test');
  if (atx) {
    ctx.atx.dispose();
    ctx.atx = new AtxService(atx);
  }
  return buildApp(ctx);
}
