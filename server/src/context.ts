/**
 * The composition root's first half: configuration, drivers and the services made from them
 * (`createContext`). The routes are built from this (app.ts). Every part that holds something
 * registers its stop with the one Lifecycle as it is made.
 */
import { hostname } from 'node:os';
import type { AppConfig } from './config';
import { createDrivers, type Drivers } from './drivers/factory';
import { storedGadgetStart } from './services/system/gadget-start';
import type { InstallLayout } from './install/install-dir';
import { Lifecycle } from './lifecycle';
import { SILENT_LOGGER, type Logger } from './log';
import { AudioHub } from './media/audio-hub';
import { JpegHub } from './media/jpeg-hub';
import { makePreview } from './media/jpeg';
import { MicSink } from './media/mic-sink';
import { VideoHub } from './media/video-hub';
import { AtxService } from './services/atx/atx-service';
import { AudioService } from './services/audio/audio-service';
import { CameraService } from './services/camera/camera-service';
import { CameraInput } from './services/camera/camera-input';
import { DEFAULT_UVC_SPEC } from './platform/gadget/uvc';
import { AuthService } from './services/auth/auth-service';
import { CloudService } from './services/cloud/cloud-service';
import { deviceId } from './services/device-id';
import { FingerbotService } from './services/fingerbot/fingerbot-service';
import { HidService } from './services/hid/hid-service';
import { hidSettingsFile } from './services/hid/hid-wiring';
import { JigglerSchedule, deviceMinuteOfDay } from './services/hid/jiggler-schedule';
import { KeymapStore } from './services/hid/keymap-store';
import { InfoService } from './services/info';
import { MsdService } from './services/msd/msd-service';
import { OcrService } from './services/ocr/ocr-service';
import { SettingsStore } from './services/settings-store';
import { hubParams, StreamerService } from './services/streamer';
import { LogBundle } from './services/support/log-bundle';
import { finishPendingReset } from './services/support/reset';
import { SupportService } from './services/support/support-service';
import { EdidService } from './services/system/edid-service';
import { IdentityService } from './services/system/identity-service';
import { NetworkService } from './services/system/network-service';
import { TimeService } from './services/system/time-service';
import { WifiService } from './services/system/wifi-service';
import { TurnService } from './services/turn';
import { UpgradeService } from './services/upgrade/upgrade-service';
import { WolService } from './services/wol/wol-service';
import { AppsService } from './services/apps/apps-service';
import { APP_FACTORIES, appHost } from './drivers/apps/registry';
import type { NetworkDriver } from './drivers/network/types';
import { removeStaleTemps } from './storage/atomic';
import { TerminalService } from './terminal/terminal-service';
import { StateRegistry } from './ws/state-registry';

/**
 * What the routes are built from: every service, each exposing its own `provider()` for the
 * event socket (`/api/ws`), the drivers under them, and the lifecycle that stops them.
 */
export interface AppContext {
  config: AppConfig;
  /** The product's firmware version (root package.json). */
  version: string;
  /** Where every part registers its stop; the app's close runs them (lifecycle.ts). */
  lifecycle: Lifecycle;
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
  /** The device shell and the serial console of `/webterm` (issue 12). */
  terminals: TerminalService;
  /** Text of the remote screen: tesseract (issue 13). */
  ocr: OcrService;
  /** The remote computer's sound and the browser's microphone (issue 14). */
  audio: AudioService;
  /** The browser's camera as the gadget's USB webcam (issue 24); null on other targets. */
  camera: CameraService | null;
  /** Its input from the Janus plugin (the camera's RTP); null on other targets. */
  cameraInput: CameraInput | null;
  /** The cloud: binding to a fleet server, the agent socket and its tunnel (issue 25). */
  cloud: CloudService;
  /** The apps center's private-network apps (issue 27, docs/apps.md). */
  apps: AppsService;
  /** Restarts the device server in place (main.ts); tests get a no-op that logs. */
  requestRestart: () => void;
}

export interface ContextOptions {
  requestRestart?: () => void;
  /** Under the launcher: the A/B install folder and the exit that boots a prepared upgrade. */
  install?: InstallLayout;
  exitForUpgrade?: () => void;
}

export function defaultHost(): string {
  return hostname();
}

/** Opens the data folder's stores, starts the drivers and makes every service over them. */
export async function createContext(
  config: AppConfig,
  version: string,
  log: Logger = SILENT_LOGGER,
  opts: ContextOptions = {},
): Promise<AppContext> {
  // A reset to defaults asked for before the restart (or interrupted by a crash) ends here.
  if (await finishPendingReset(config.data_dir)) log.warn({}, 'reset to defaults: data wiped');
  await removeStaleTemps(config.data_dir);
  const lifecycle = new Lifecycle(log);
  const auth = await AuthService.open(config.data_dir, {
    sessionExpireS: config.auth.session_expire_s,
    rateLimit: config.auth.rate_limit,
    trustedDeviceDays: config.auth.trusted_device_days,
    log,
  });
  lifecycle.onStop('auth', () => auth.close());
  const settings = await SettingsStore.open(config.data_dir, log);
  const drivers = await createDrivers(config, log, {
    gadgetStart: () => storedGadgetStart(config.data_dir),
  });
  lifecycle.onStop('drivers', () => drivers.dispose());
  await drivers.init();
  const requestRestart =
    opts.requestRestart ?? (() => log.warn({}, 'restart requested: not supported here'));
  const media = await mediaServices(config, drivers, log, lifecycle);
  const input = await inputServices(config, drivers, log, lifecycle);
  const msd = await MsdService.open({
    dataDir: config.data_dir,
    driver: drivers.msd,
    log,
    requestRestart,
    remote: { allowLan: config.msd.remote.allow_lan, allowHosts: config.msd.remote.allow_hosts },
  });
  lifecycle.onStop('msd', () => msd.dispose());
  const system = await systemServices(config, drivers, log, lifecycle, input.hid, msd);
  // `enable_mic` as the server starts: a change takes effect at the next start (GL)
  // the gadget target's webcam, fed from the browser's camera (issue 24)
  // (with gadget.uvc false too: the camera state then says the webcam is turned off)
  const camera = drivers.gadget
    ? new CameraService({
        gadget: drivers.gadget,
        program: config.gadget.uvc_stream,
        spec: DEFAULT_UVC_SPEC,
        log,
      })
    : null;
  camera?.init();
  if (camera) lifecycle.onStop('camera', () => camera.dispose());
  const cameraInput = camera ? new CameraInput(camera, log, { ffmpeg: config.video.ffmpeg }) : null;
  if (cameraInput) lifecycle.onStop('camera-input', () => cameraInput.dispose());
  const audio = new AudioService({
    camera,
    driver: drivers.audio,
    hub: new AudioHub(drivers.audio, log, { ffmpeg: config.video.ffmpeg }),
    mic: new MicSink(drivers.audio, log, { ffmpeg: config.video.ffmpeg }),
    enableMic: system.identity.get().enable_mic,
  });
  lifecycle.onStop('audio', () => audio.dispose());
  const power = await powerServices(config, drivers, log, lifecycle);
  const registry = new StateRegistry();
  lifecycle.onStop('registry', () => registry.dispose());
  const bundle = new LogBundle({
    dataDir: config.data_dir,
    config,
    versions: async () => ({
      firmware: version,
      node: process.versions,
      target: config.target,
      model: config.device.model,
      ...(await drivers.describe()),
    }),
    parts: async () => ({
      state: await registry.snapshot(() => undefined),
      network: await system.network.config().catch((err: Error) => ({ error: err.message })),
      hostname: await system.network.hostname().catch((err: Error) => ({ error: err.message })),
      system: system.identity.get(),
    }),
  });
  const upgrade = new UpgradeService({
    dataDir: config.data_dir,
    config: config.upgrade,
    model: config.device.model,
    version,
    log,
    install: opts.install,
    exitForUpgrade: opts.exitForUpgrade,
  });
  lifecycle.onStop('upgrade', () => upgrade.dispose());
  const terminals = new TerminalService({
    serial: drivers.serial,
    shell: { file: config.terminal.shell ?? undefined, args: config.terminal.args },
    startTimeoutMs: config.terminal.start_timeout_s * 1000,
    log,
  });
  lifecycle.onStop('terminals', () => terminals.dispose());
  const id = await deviceId(config.data_dir);
  const cloud = await CloudService.open({
    dataDir: config.data_dir,
    config: {
      ...config.cloud,
      url: config.cloud.url === null ? null : new URL(config.cloud.url).origin,
    },
    version,
    model: config.device.model,
    auth,
    turn: media.turn,
    identity: {
      // not status(): that makes the testbed's namespaces (0.4-0.5 s) at every start
      mac: () => drivers.system.network.macAddress(),
      serial: async () => id,
    },
    snapshots: {
      snapshot: () => media.streamer.takeSnapshot({ save: false, load: false, allowOffline: true }),
      preview: (jpeg, box, quality) => makePreview(media.streamer.jpeg.ffmpeg, jpeg, box, quality),
    },
    sessionLifetimeMs: config.auth.session_expire_s * 1000,
    log,
  });
  lifecycle.onStop('cloud', () => cloud.dispose());
  const apps = await appsService(config, drivers.system.network, log, lifecycle);
  return {
    config,
    version,
    lifecycle,
    auth,
    settings,
    registry,
    drivers,
    ...media,
    ...input,
    msd,
    ...system,
    audio,
    camera,
    cameraInput,
    cloud,
    apps,
    ...power,
    bundle,
    support: new SupportService({ dataDir: config.data_dir, url: config.support.url, bundle, log }),
    upgrade,
    terminals,
    info: new InfoService({
      config,
      version,
      host: defaultHost(),
      deviceId: id,
      platform: {
        base: drivers.description,
        video: drivers.video.name === 'disabled' ? null : drivers.video.name,
      },
      gadget: drivers.gadget,
    }),
    ocr: new OcrService({ ffmpeg: config.video.ffmpeg, log }),
    requestRestart,
  };
}

/** The picture: one encoder (video hub), its JPEG side, the streamer's state, TURN. */
async function mediaServices(
  config: AppConfig,
  drivers: Drivers,
  log: Logger,
  lifecycle: Lifecycle,
): Promise<Pick<AppContext, 'video' | 'streamer' | 'turn'>> {
  const loaded = await StreamerService.loadParams(config.data_dir, log);
  const video = new VideoHub(drivers.video, hubParams(loaded.params), log, {
    ffmpeg: config.video.ffmpeg,
    encoder: { stallMs: config.video.encoder_stall_ms },
    spareEncoder: config.video.spare_encoder,
  });
  lifecycle.onStop('video hub', () => video.dispose());
  const jpeg = new JpegHub(video, log, { ffmpeg: config.video.ffmpeg });
  lifecycle.onStop('jpeg hub', () => jpeg.dispose());
  const streamer = StreamerService.create(loaded, drivers.video, video, jpeg);
  lifecycle.onStop('streamer', () => streamer.dispose());
  return { video, streamer, turn: await TurnService.load(config, log) };
}

/** Keyboard and mouse: the HID service with its settings, jiggler schedule and keymaps. */
async function inputServices(
  config: AppConfig,
  drivers: Drivers,
  log: Logger,
  lifecycle: Lifecycle,
): Promise<Pick<AppContext, 'hid' | 'keymaps'>> {
  const hidSettings = hidSettingsFile(config.data_dir);
  const hid = new HidService({
    driver: drivers.hid,
    settings: await hidSettings.load(),
    saveSettings: (s) => hidSettings.save(s),
    jigglerIntervalS: config.hid.jiggler_interval_s,
    schedule: await JigglerSchedule.open(config.data_dir),
    localMinute: deviceMinuteOfDay(drivers.system.clock),
    log,
  });
  await hid.start();
  lifecycle.onStop('hid', () => hid.dispose());
  const keymaps = new KeymapStore({
    dirs: config.hid.keymaps_dirs,
    defaultName: config.hid.keymap,
  });
  return { hid, keymaps };
}

/** The apps center (issue 27): each app stops before the network it lives in. */
async function appsService(
  config: AppConfig,
  network: NetworkDriver,
  log: Logger,
  lifecycle: Lifecycle,
): Promise<AppsService> {
  const host = appHost(config.data_dir, network, log);
  const apps = new AppsService(APP_FACTORIES.map((make) => make(host, config.apps)));
  lifecycle.onStop('apps', () => apps.dispose());
  await apps.init();
  return apps;
}

/** The device's own administration: identity, EDID, network, Wi-Fi, time (issue 11). */
async function systemServices(
  config: AppConfig,
  drivers: Drivers,
  log: Logger,
  lifecycle: Lifecycle,
  hid: HidService,
  msd: MsdService,
): Promise<Pick<AppContext, 'identity' | 'edid' | 'network' | 'wifi' | 'time'>> {
  const identity = await IdentityService.open({
    dataDir: config.data_dir,
    usb: drivers.system.usb,
    hid,
    msd,
    defaultMsdPartition: msd.root,
    log,
  });
  await identity.start();
  const edid = new EdidService({ dataDir: config.data_dir, display: drivers.system.display, log });
  await edid.start();
  const network = new NetworkService(drivers.system.network, {
    dataDir: config.data_dir,
    confirmTimeoutS: config.system.confirm_timeout_s,
    log,
  });
  lifecycle.onStop('network', () => network.dispose());
  const wifi = new WifiService(drivers.system.wifi, network.safe, log);
  await network.start((previous) => wifi.recover(previous));
  return {
    identity,
    edid,
    network,
    wifi,
    time: new TimeService({ clock: drivers.system.clock, log }),
  };
}

/** Power: ATX buttons, Wake-on-LAN, the fingerbot (kvmd's GPIO view of the three: app.ts). */
async function powerServices(
  config: AppConfig,
  drivers: Drivers,
  log: Logger,
  lifecycle: Lifecycle,
): Promise<Pick<AppContext, 'atx' | 'wol' | 'fingerbot'>> {
  const atx = new AtxService(drivers.atx, log);
  lifecycle.onStop('atx', () => atx.dispose());
  const wol = await WolService.open(config.data_dir, config.wol, drivers.wol);
  const fingerbot = new FingerbotService(drivers.fingerbot, config.data_dir);
  lifecycle.onStop('fingerbot', () => fingerbot.dispose());
  return { atx, wol, fingerbot };
}
