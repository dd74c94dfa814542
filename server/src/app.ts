/**
 * buildApp: the Fastify instance with every route, hook and socket. It never listens; main.ts
 * (and the tests, through inject or an ephemeral port) decide where it is served.
 */
import Fastify, { LogController, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import fastifyCookie from '@fastify/cookie';
import fastifyMultipart from '@fastify/multipart';
import fastifyWebsocket from '@fastify/websocket';
import { loadConfigDefaults } from './paths';
import { buildConfig, type AppConfig } from './config';
import type { AppContext } from './context';
import { defaultHost } from './context';
import { SILENT_LOGGER, type Logger } from './log';
import { JpegHub } from './media/jpeg-hub';
import { VideoHub } from './media/video-hub';
import { janusFeatures, registerJanus } from './janus/gateway';
import { mediaRoutes } from './routes/media';
import { rebootRoutes } from './routes/reboot';
import { upgradeRoutes } from './routes/upgrade';
import { UpgradeService } from './services/upgrade/upgrade-service';
import { deviceId } from './services/device-id';
import type { InstallLayout } from './install/install-dir';
import { resetRoutes } from './routes/reset';
import { supportRoutes } from './routes/support';
import { LogBundle } from './services/support/log-bundle';
import { finishPendingReset } from './services/support/reset';
import { SupportService } from './services/support/support-service';
import { msdRoutes } from './routes/msd';
import { hidRoutes } from './routes/hid';
import { atxRoutes } from './routes/atx';
import { fingerbotRoutes } from './routes/fingerbot';
import { wolRoutes } from './routes/wol';
import { switchRoutes } from './routes/switch';
import { gpioRoutes } from './routes/gpio';
import { logRoutes } from './routes/log';
import { metricsRoutes } from './routes/metrics';
import { redfishRoutes } from './routes/redfish';
import { GpioService } from './services/gpio/gpio-service';
import { AtxService } from './services/atx/atx-service';
import { FingerbotService } from './services/fingerbot/fingerbot-service';
import { WolService } from './services/wol/wol-service';
import { HidService } from './services/hid/hid-service';
import { attachHidInput, hidSettingsFile, rtcInputClient } from './services/hid/hid-wiring';
import { JigglerSchedule, deviceMinuteOfDay } from './services/hid/jiggler-schedule';
import { KeymapStore } from './services/hid/keymap-store';
import { MsdService } from './services/msd/msd-service';
import { streamerRoutes } from './routes/streamer';
import { ustreamerRoutes } from './routes/ustreamer';
import { ocrRoutes } from './routes/ocr';
import { audioRoutes } from './routes/audio';
import { AudioService } from './services/audio/audio-service';
import { AudioHub } from './media/audio-hub';
import { MicSink } from './media/mic-sink';
import { OcrService } from './services/ocr/ocr-service';
import { hubParams, StreamerService } from './services/streamer';
import { TurnService } from './services/turn';
import { InfoService } from './services/info';
import { createDrivers } from './drivers/factory';
import { ServiceUnavailableError, toHttp } from './errors';
import { registerAuthHook } from './http/auth';
import { registerFormParser } from './http/forms';
import { registerBodyParsers } from './http/bodies';
import {
  answerClientError,
  closeIfBodyUnread,
  edgeLimits,
  edgeRequestChecks,
  frameworkError,
  edgeServerOptions,
  guardServer,
  requireHost,
} from './http/edge';
import { LogBudget } from './http/log-budget';
import { frameAncestorsHook } from './http/frame-ancestors';
import { registerStatic } from './http/static';
import { authRoutes } from './routes/auth';
import { infoRoutes } from './routes/info';
import { initRoutes } from './routes/init';
import { systemRoutes } from './routes/system';
import { systemParamsRoutes } from './routes/system-params';
import { timeRoutes } from './routes/time';
import { edidRoutes } from './routes/edid';
import { EdidService } from './services/system/edid-service';
import { IdentityService } from './services/system/identity-service';
import { TimeService } from './services/system/time-service';
import { NetworkService } from './services/system/network-service';
import { WifiService } from './services/system/wifi-service';
import { networkRoutes } from './routes/network';
import { repeaterRoutes } from './routes/repeater';
import { twoFaRoutes } from './routes/twofa';
import { wsRoutes } from './routes/ws';
import { terminalRoutes } from './routes/terminal';
import { TerminalService } from './terminal/terminal-service';
import { AuthService } from './services/auth/auth-service';
import { SESSION_SWEEP_MS } from './services/auth/sessions';
import { SettingsStore } from './services/settings-store';
import { removeStaleTemps } from './storage/atomic';
import { EventHub } from './ws/event-hub';
import { MAX_WS_PAYLOAD, SocketRegistry, wsErrorHandler } from './ws/socket-guard';
import { StateRegistry } from './ws/state-registry';

export interface RouteEntry {
  method: string;
  url: string;
  public: boolean;
  websocket: boolean;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Every route registered, for the auth matrix test and docs. */
    routeTable: RouteEntry[];
    /** The event hub: state events to every /api/ws client (ws/event-hub.ts). */
    events: EventHub;
    /** Every open WebSocket, their budgets and counts (ws/socket-guard.ts). */
    sockets: SocketRegistry;
    ctx: AppContext;
    /** One budget for every log line an anonymous request causes (http/log-budget.ts). */
    anonLog: LogBudget;
  }
}

/** Opens the data folder's stores and starts the target's drivers. */
export async function createContext(
  config: AppConfig,
  version: string,
  log: Logger = SILENT_LOGGER,
  opts: {
    requestRestart?: () => void;
    /** Under the launcher: the A/B install folder and the exit that boots a prepared upgrade. */
    install?: InstallLayout;
    exitForUpgrade?: () => void;
  } = {},
): Promise<AppContext> {
  // A reset to defaults asked for before the restart (or interrupted by a crash) ends here.
  if (await finishPendingReset(config.data_dir)) log.warn({}, 'reset to defaults: data wiped');
  await removeStaleTemps(config.data_dir);
  const auth = await AuthService.open(config.data_dir, {
    sessionExpireS: config.auth.session_expire_s,
    rateLimit: config.auth.rate_limit,
    trustedDeviceDays: config.auth.trusted_device_days,
    log,
  });
  const settings = await SettingsStore.open(config.data_dir, log);
  const drivers = await createDrivers(config, log);
  await drivers.init();
  const loaded = await StreamerService.loadParams(config.data_dir, log);
  const video = new VideoHub(drivers.video, hubParams(loaded.params), log, {
    ffmpeg: config.video.ffmpeg,
  });
  const streamer = StreamerService.create(
    loaded,
    drivers.video,
    video,
    new JpegHub(video, log, { ffmpeg: config.video.ffmpeg }),
  );
  const turn = await TurnService.load(config, log);
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
  const keymaps = new KeymapStore({
    dirs: config.hid.keymaps_dirs,
    defaultName: config.hid.keymap,
  });
  const requestRestart =
    opts.requestRestart ?? (() => log.warn({}, 'restart requested: not supported here'));
  const msd = await MsdService.open({
    dataDir: config.data_dir,
    driver: drivers.msd,
    log,
    requestRestart,
    remote: {
      allowLan: config.msd.remote.allow_lan,
      allowHosts: config.msd.remote.allow_hosts,
    },
  });
  const identity = await IdentityService.open({
    dataDir: config.data_dir,
    usb: drivers.system.usb,
    hid,
    msd,
    defaultMsdPartition: msd.root,
    log,
  });
  await identity.start();
  // `enable_mic` as the server starts: a change takes effect at the next start (GL)
  const audio = new AudioService({
    driver: drivers.audio,
    hub: new AudioHub(drivers.audio, log, { ffmpeg: config.video.ffmpeg }),
    mic: new MicSink(drivers.audio, log, { ffmpeg: config.video.ffmpeg }),
    enableMic: identity.get().enable_mic,
  });
  const edid = new EdidService({ dataDir: config.data_dir, display: drivers.system.display, log });
  await edid.start();
  const network = new NetworkService(drivers.system.network, {
    dataDir: config.data_dir,
    confirmTimeoutS: config.system.confirm_timeout_s,
    log,
  });
  const wifi = new WifiService(drivers.system.wifi, network.safe, log);
  await network.start((previous) => wifi.recover(previous));
  const registry = new StateRegistry();
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
      network: await network.config().catch((err: Error) => ({ error: err.message })),
      hostname: await network.hostname().catch((err: Error) => ({ error: err.message })),
      system: identity.get(),
    }),
  });
  return {
    bundle,
    support: new SupportService({ dataDir: config.data_dir, url: config.support.url, bundle, log }),
    network,
    wifi,
    upgrade: new UpgradeService({
      dataDir: config.data_dir,
      config: config.upgrade,
      model: config.device.model,
      version,
      log,
      install: opts.install,
      exitForUpgrade: opts.exitForUpgrade,
    }),
    hid,
    keymaps,
    msd,
    identity,
    time: new TimeService({ clock: drivers.system.clock, log }),
    edid,
    atx: new AtxService(drivers.atx, log),
    wol: await WolService.open(config.data_dir, config.wol, drivers.wol),
    fingerbot: new FingerbotService(drivers.fingerbot, config.data_dir),
    requestRestart,
    config,
    version,
    auth,
    settings,
    registry,
    drivers,
    video,
    streamer,
    turn,
    info: new InfoService({
      config,
      version,
      host: defaultHost(),
      platform: {
        base: drivers.description,
        video: drivers.video.name === 'disabled' ? null : drivers.video.name,
      },
      deviceId: await deviceId(config.data_dir),
    }),
    ocr: new OcrService({ ffmpeg: config.video.ffmpeg, log }),
    audio,
  };
}

/** Whether a line at `level` would be written (Fastify's no-op logger has no isLevelEnabled). */
function logsAt(log: object, level: string): boolean {
  const enabled = (log as { isLevelEnabled?: (level: string) => boolean }).isLevelEnabled;
  return typeof enabled === 'function' && enabled.call(log, level);
}

export interface BuildOptions {
  logger?: FastifyServerOptions['loggerInstance'] | false;
  https?: { key: Buffer; cert: Buffer } | null;
}

export async function buildApp(ctx: AppContext, opts: BuildOptions = {}): Promise<FastifyInstance> {
  const { config } = ctx;
  // The HTTP edge's timeouts and caps (http/edge.ts); some only the constructor takes.
  const edge = edgeLimits(config.server);
  const edgeOptions = edgeServerOptions(edge);
  const base: FastifyServerOptions = {
    bodyLimit: config.server.body_limit,
    trustProxy: false,
    keepAliveTimeout: edge.keepAliveTimeoutMs,
    connectionTimeout: edge.idleTimeoutMs,
    clientErrorHandler: answerClientError,
    frameworkErrors: frameworkError,
    // Per-request lines would drown the log file; routes log what matters themselves.
    logController: new LogController({ disableRequestLogging: true }),
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 256 },
    // Fastify's own 503 while closing is not the kvmd envelope: the onRequest hook below answers.
    return503OnClosing: false,
    ...(opts.logger ? { loggerInstance: opts.logger } : { logger: false }),
  };
  const app = (opts.https
    ? Fastify({ ...base, https: { ...edgeOptions, ...opts.https } } as FastifyServerOptions)
    : Fastify({
        ...base,
        http: edgeOptions,
      } as FastifyServerOptions)) as unknown as FastifyInstance;
  const anonLog = new LogBudget();
  guardServer(app.server, edge, app.log, anonLog);
  // During a restart in place (virtual media on/off) or a stop, requests still arriving on open
  // keep-alive connections are turned away before any service, some of them closing, is reached.
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onRequest', async (_request, reply) => {
    if (!closing) return;
    reply.header('connection', 'close');
    throw new ServiceUnavailableError(
      'The device server is restarting or stopping: try again in a few seconds',
    );
  });
  app.addHook('onRequest', requireHost);
  app.addHook('onRequest', edgeRequestChecks);
  app.addHook('onRequest', frameAncestorsHook(config.server.frame_ancestors));

  app.decorate('routeTable', [] as RouteEntry[]);
  app.decorate('ctx', ctx);
  app.decorate('anonLog', anonLog);
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const method of methods) {
      if (method === 'HEAD') continue;
      app.routeTable.push({
        method,
        url: route.url,
        public: Boolean(route.config?.public),
        websocket: Boolean(
          (route as { websocket?: boolean }).websocket ??
          (route as { wsHandler?: unknown }).wsHandler,
        ),
      });
    }
  });

  app.setErrorHandler((err, request, reply) => {
    const answer = toHttp(err);
    const level = answer.status >= 500 ? 'error' : 'debug';
    // A request without a session may write to the log only within the shared budget, so
    // strangers cannot rotate the real history away (issue 9, item 16).
    const budget = request.auth == null && logsAt(request.log, level) ? app.anonLog.take() : null;
    if (budget === null || budget.ok) {
      const suppressed =
        budget?.ok && budget.suppressed > 0 ? { suppressed: budget.suppressed } : {};
      if (level === 'error')
        request.log.error({ err, url: request.url, ...suppressed }, 'request failed');
      else
        request.log.debug(
          { err: (err as Error).message, url: request.url, status: answer.status, ...suppressed },
          'request refused',
        );
    }
    closeIfBodyUnread(request, reply);
    reply.code(answer.status).send(answer.body);
  });
  // Every JSON answer in the kvmd envelope; non-object payloads (files, text) pass through.
  app.addHook('preSerialization', async (_request, reply, payload) => {
    if (
      reply.statusCode === 200 &&
      payload !== null &&
      typeof payload === 'object' &&
      !('ok' in payload)
    ) {
      return { ok: true, result: payload };
    }
    return payload;
  });

  await app.register(fastifyCookie);
  await app.register(fastifyMultipart, { limits: { fileSize: 0, files: 0, fields: 32 } });
  // Each socket's own budgets and smaller size limit are in ws/socket-guard.ts.
  await app.register(fastifyWebsocket, {
    options: { maxPayload: MAX_WS_PAYLOAD },
    errorHandler: wsErrorHandler(app.log),
  });
  const sockets = new SocketRegistry(app.log);
  sockets.sessionCheck = (token) => ctx.auth.session(token) !== null;
  app.decorate('sockets', sockets);
  ctx.auth.sessions.on('ended', (hash, reason) => sockets.endSession(hash, reason));
  // An expired session's sockets close although their client never uses its token (a terminal).
  const sessionSweep = setInterval(() => ctx.auth.sessions.expireDue(), SESSION_SWEEP_MS);
  sessionSweep.unref();
  app.addHook('onClose', async () => clearInterval(sessionSweep));
  // Header-credential sockets have no session: any change of the credentials ends them.
  ctx.auth.on('credentialsChanged', () => sockets.endHeaderAuthenticated('credentials changed'));
  registerBodyParsers(app);
  registerFormParser(app);
  registerAuthHook(app, ctx.auth, config.server.trust_proxy);

  const events = new EventHub(
    ctx.registry,
    app.log,
    (client) => sockets.checkSession(client.guard),
    sockets,
  );
  app.decorate('events', events);
  // Registration order is the order of a new client's snapshot.
  for (const service of [
    ctx.info,
    ctx.streamer,
    ctx.turn,
    ctx.hid,
    ctx.keymaps,
    ctx.atx,
    ctx.fingerbot,
    ctx.msd,
    ctx.ocr,
    ctx.audio,
  ]) {
    ctx.registry.register(service.provider());
  }
  attachHidInput(events, ctx.hid);
  const gpio = new GpioService({
    atx: ctx.atx,
    wol: ctx.wol,
    fingerbot: ctx.fingerbot,
    log: app.log,
  });
  ctx.registry.register(gpio.provider());
  events.on('streamClients', (count) => ctx.video.setWarmers(count));

  authRoutes(app, ctx);
  initRoutes(app, ctx);
  twoFaRoutes(app, ctx);
  infoRoutes(app, ctx);
  systemRoutes(app, ctx);
  systemParamsRoutes(app, ctx.identity);
  timeRoutes(app, ctx.time);
  edidRoutes(app, ctx.edid);
  networkRoutes(app, ctx.network);
  repeaterRoutes(app, ctx.wifi);
  wsRoutes(app, events, sockets);
  terminalRoutes(
    app,
    new TerminalService({
      serial: ctx.drivers.serial,
      shell: { file: config.terminal.shell ?? undefined, args: config.terminal.args },
      startTimeoutMs: config.terminal.start_timeout_s * 1000,
      log: app.log,
    }),
    sockets,
  );
  streamerRoutes(app, ctx.streamer, () => ctx.turn.state(), ctx.ocr);
  ustreamerRoutes(app, ctx.streamer);
  ocrRoutes(app, ctx.ocr);
  audioRoutes(app, ctx.audio);
  mediaRoutes(app, ctx.video, sockets);
  hidRoutes(app, { hid: ctx.hid, keymaps: ctx.keymaps, defaultKeymap: config.hid.keymap });
  atxRoutes(app, ctx.atx);
  wolRoutes(app, ctx.wol);
  switchRoutes(app, ctx);
  fingerbotRoutes(app, ctx.fingerbot);
  msdRoutes(app, ctx.msd);
  gpioRoutes(app, gpio);
  logRoutes(app, {
    dataDir: config.data_dir,
    files: config.log.files,
    onSessionEnded: (listener) => ctx.auth.sessions.on('ended', listener),
  });
  metricsRoutes(app, { atx: ctx.atx, gpio, streamer: ctx.streamer, hid: ctx.hid, msd: ctx.msd });
  redfishRoutes(app, { atx: ctx.atx, msd: ctx.msd });
  rebootRoutes(app, { requestRestart: ctx.requestRestart, log: app.log });
  upgradeRoutes(app, ctx.upgrade);
  resetRoutes(app, { dataDir: config.data_dir, requestRestart: ctx.requestRestart, log: app.log });
  supportRoutes(app, { bundle: ctx.bundle, support: ctx.support });
  registerJanus(app, {
    feed: ctx.video,
    // The device's own peer gathers host candidates and TURN relays only: a STUN round trip
    // holds werift's offer for 5 s when the STUN server is unreachable (an offline device),
    // and the browser's STUN (features.ice.url) already finds the public side of the pair.
    iceServers: () => ctx.turn.iceServers().filter((s) => s.urls.startsWith('turn')),
    features: () => janusFeatures(ctx.turn.iceServers(), ctx.audio.features()),
    audio: ctx.audio,
    onInput: (key, frame) => ctx.hid.handleFrame(rtcInputClient(key), frame),
    onViewerGone: (key) => ctx.hid.clientGone(rtcInputClient(key)),
    log: app.log,
    sockets,
    auth: {
      apiSecret: config.webrtc.janus_api_secret,
      tokenAuth: config.webrtc.janus_token_auth,
    },
  });
  ctx.auth.sessions.on('ended', (hash) => ctx.hid.sessionEnded(hash));
  registerStatic(app, config.server.web_dir, ctx.auth, config.server.trust_proxy);

  app.addHook('onClose', async () => {
    events.close();
    ctx.registry.dispose();
    ctx.streamer.dispose();
    ctx.hid.dispose();
    ctx.atx.dispose();
    ctx.fingerbot.dispose();
    ctx.msd.dispose();
    ctx.network.dispose();
    await ctx.upgrade.dispose();
    await ctx.streamer.jpeg.dispose();
    await ctx.video.dispose();
    await ctx.audio.dispose();
    await ctx.drivers.dispose();
    await ctx.auth.close();
  });
  return app;
}

/** A context and app over a data folder, for tests and benches (no TLS, no logger). */
export async function buildTestApp(
  dataDir: string,
  overrides: Record<string, unknown> = {},
): Promise<FastifyInstance> {
  const config = buildConfig(
    {
      data_dir: dataDir,
      target: 'testbed',
      webrtc: { stun_url: null },
      // bash without the host's dotfiles: a test must not wait on (or break) its profile
      terminal: { shell: '/bin/bash', args: ['--noprofile', '--norc'] },
      ...overrides,
    },
    loadConfigDefaults(),
  );
  const ctx = await createContext(config, '0.0.0-test');
  return buildApp(ctx);
}
