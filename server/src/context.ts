/** What the routes are built from: configuration and the services, made by `createContext`. */
import { hostname } from 'node:os';
import type { AppConfig } from './config';
import type { AuthService } from './services/auth/auth-service';
import type { SettingsStore } from './services/settings-store';
import type { VideoHub } from './media/video-hub';
import type { StreamerService } from './services/streamer';
import type { InfoService } from './services/info';
import type { TurnService } from './services/turn';
import type { AtxService } from './services/atx/atx-service';
import type { FingerbotService } from './services/fingerbot/fingerbot-service';
import type { HidService } from './services/hid/hid-service';
import type { MsdService } from './services/msd/msd-service';
import type { WolService } from './services/wol/wol-service';
import type { KeymapStore } from './services/hid/keymap-store';
import type { Drivers } from './drivers/factory';
import type { IdentityService } from './services/system/identity-service';
import type { TimeService } from './services/system/time-service';
import type { EdidService } from './services/system/edid-service';
import type { NetworkService } from './services/system/network-service';
import type { WifiService } from './services/system/wifi-service';
import type { UpgradeService } from './services/upgrade/upgrade-service';
import type { StateRegistry } from './ws/state-registry';
import type { LogBundle } from './services/support/log-bundle';
import type { SupportService } from './services/support/support-service';
import type { OcrService } from './services/ocr/ocr-service';
import type { AudioService } from './services/audio/audio-service';

/**
 * The composition root's product: every service, each exposing its own `provider()` for the
 * event socket (`/api/ws`), and the drivers under them.
 */
export interface AppContext {
  config: AppConfig;
  /** The product's firmware version (root package.json). */
  version: string;
  auth: AuthService;
  settings: SettingsStore;
  registry: StateRegistry;
  drivers: Drivers;
  /** The video hub: one encoder, many viewers (media/video-hub.ts). */
  video: VideoHub;
  streamer: StreamerService;
  turn: TurnService;
  info: InfoService;
  hid: HidService;
  keymaps: KeymapStore;
  atx: AtxService;
  wol: WolService;
  fingerbot: FingerbotService;
  msd: MsdService;
  /** System params, USB identity, OTG functions (issue 11). */
  identity: IdentityService;
  /** Device clock and time zone (issue 11). */
  time: TimeService;
  /** Display identity (EDID) of the remote computer's monitor (issue 11). */
  edid: EdidService;
  /** Ethernet, host name and safe network changes (issue 11). */
  network: NetworkService;
  /** The Wi-Fi client (issue 11). */
  wifi: WifiService;
  /** Firmware packages: version, channels, download and upload (issue 12). */
  upgrade: UpgradeService;
  /** The masked log bundle (`/api/upgrade/log`, issue 12). */
  bundle: LogBundle;
  /** Contact support: sent or kept as bundles (issue 12). */
  support: SupportService;
  /** Text of the remote screen: tesseract (issue 13). */
  ocr: OcrService;
  /** The remote computer's sound and the browser's microphone (issue 14). */
  audio: AudioService;
  /** Restarts the device server in place (main.ts); tests get a no-op that logs. */
  requestRestart: () => void;
}

export function defaultHost(): string {
  return hostname();
}
