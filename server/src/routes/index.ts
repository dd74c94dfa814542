/**
 * The subsystems' routes, as data: each entry is registered by app.ts as an encapsulated Fastify
 * plugin (its own hooks stay in its scope), built from the context's services. A new subsystem
 * adds one line here.
 */
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../context';
import { janusFeatures, registerJanus } from '../janus/gateway';
import { iceNetworkOf } from '../janus/peer-params';
import { HevcFeed } from '../media/hevc-feed';
import type { GpioService } from '../services/gpio/gpio-service';
import { rtcInputClient } from '../services/hid/hid-wiring';
import { appsRoutes } from './apps';
import { atxRoutes } from './atx';
import { audioRoutes } from './audio';
import { authRoutes } from './auth';
import { cloudRoutes } from './cloud';
import { edidRoutes } from './edid';
import { fingerbotRoutes } from './fingerbot';
import { gpioRoutes } from './gpio';
import { hidRoutes } from './hid';
import { infoRoutes } from './info';
import { initRoutes } from './init';
import { logRoutes } from './log';
import { mediaRoutes } from './media';
import { metricsRoutes, type RequestCounter } from './metrics';
import { msdRoutes } from './msd';
import { netbirdRoutes } from './netbird';
import { networkRoutes } from './network';
import { ocrRoutes } from './ocr';
import { rebootRoutes } from './reboot';
import { redfishRoutes } from './redfish';
import { repeaterRoutes } from './repeater';
import { resetRoutes } from './reset';
import { streamerRoutes } from './streamer';
import { supportRoutes } from './support';
import { switchRoutes } from './switch';
import { systemParamsRoutes } from './system-params';
import { systemRoutes } from './system';
import { terminalRoutes } from './terminal';
import { tailscaleRoutes } from './tailscale';
import { timeRoutes } from './time';
import { twoFaRoutes } from './twofa';
import { upgradeRoutes } from './upgrade';
import { ustreamerRoutes } from './ustreamer';
import { wireguardRoutes } from './wireguard';
import { wolRoutes } from './wol';
import { wsRoutes } from './ws';
import { zerotierRoutes } from './zerotier';

/** What a plugin gets besides its scope: the context and the app-wide counters. */
export interface RouteDeps {
  ctx: AppContext;
  /** kvmd's GPIO view over the power services (built by app.ts). */
  gpio: GpioService;
  /** Requests by method and status, counted at the root for every route (metrics.ts). */
  requests: RequestCounter;
}

export interface RoutePlugin {
  name: string;
  register(scope: FastifyInstance, deps: RouteDeps): void;
}

export const ROUTE_PLUGINS: readonly RoutePlugin[] = [
  {
    name: 'auth',
    register: (app, { ctx }) => {
      authRoutes(app, ctx);
      initRoutes(app, ctx);
      twoFaRoutes(app, ctx);
    },
  },
  { name: 'info', register: (app, { ctx }) => infoRoutes(app, ctx) },
  { name: 'apps', register: (app, { ctx }) => appsRoutes(app, ctx.apps) },
  { name: 'netbird', register: (app, { ctx }) => netbirdRoutes(app, ctx.apps) },
  { name: 'zerotier', register: (app, { ctx }) => zerotierRoutes(app, ctx.apps) },
  { name: 'tailscale', register: (app, { ctx }) => tailscaleRoutes(app, ctx.apps) },
  { name: 'wireguard', register: (app, { ctx }) => wireguardRoutes(app, ctx.apps) },
  { name: 'system', register: (app, { ctx }) => systemRoutes(app, ctx) },
  { name: 'system params', register: (app, { ctx }) => systemParamsRoutes(app, ctx.identity) },
  { name: 'time', register: (app, { ctx }) => timeRoutes(app, ctx.time) },
  { name: 'edid', register: (app, { ctx }) => edidRoutes(app, ctx.edid) },
  { name: 'network', register: (app, { ctx }) => networkRoutes(app, ctx.network) },
  { name: 'wifi', register: (app, { ctx }) => repeaterRoutes(app, ctx.wifi) },
  { name: 'events', register: (app) => wsRoutes(app, app.events, app.sockets) },
  { name: 'terminal', register: (app, { ctx }) => terminalRoutes(app, ctx.terminals, app.sockets) },
  {
    name: 'streamer',
    register: (app, { ctx }) => {
      streamerRoutes(app, ctx.streamer, () => ctx.turn.state(), ctx.ocr);
      ustreamerRoutes(app, ctx.streamer);
      ocrRoutes(app, ctx.ocr);
    },
  },
  { name: 'audio', register: (app, { ctx }) => audioRoutes(app, ctx.audio) },
  { name: 'media', register: (app, { ctx }) => mediaRoutes(app, ctx.video, app.sockets) },
  {
    name: 'hid',
    register: (app, { ctx }) =>
      hidRoutes(app, { hid: ctx.hid, keymaps: ctx.keymaps, defaultKeymap: ctx.config.hid.keymap }),
  },
  { name: 'atx', register: (app, { ctx }) => atxRoutes(app, ctx.atx) },
  { name: 'wol', register: (app, { ctx }) => wolRoutes(app, ctx.wol) },
  { name: 'switch', register: (app, { ctx }) => switchRoutes(app, ctx) },
  { name: 'fingerbot', register: (app, { ctx }) => fingerbotRoutes(app, ctx.fingerbot) },
  { name: 'msd', register: (app, { ctx }) => msdRoutes(app, ctx.msd) },
  { name: 'gpio', register: (app, { gpio }) => gpioRoutes(app, gpio) },
  {
    name: 'log',
    register: (app, { ctx }) =>
      logRoutes(app, {
        dataDir: ctx.config.data_dir,
        files: ctx.config.log.files,
        onSessionEnded: (listener) => ctx.auth.sessions.on('ended', listener),
      }),
  },
  {
    name: 'metrics',
    register: (app, { ctx, gpio, requests }) =>
      metricsRoutes(app, {
        atx: ctx.atx,
        gpio,
        streamer: ctx.streamer,
        hid: ctx.hid,
        msd: ctx.msd,
        requests,
      }),
  },
  {
    name: 'redfish',
    register: (app, { ctx }) => redfishRoutes(app, { atx: ctx.atx, msd: ctx.msd }),
  },
  {
    name: 'reboot',
    register: (app, { ctx }) =>
      rebootRoutes(app, { requestRestart: ctx.requestRestart, log: app.log }),
  },
  { name: 'upgrade', register: (app, { ctx }) => upgradeRoutes(app, ctx.upgrade) },
  {
    name: 'cloud',
    register: (app, { ctx }) => cloudRoutes(app, ctx.cloud, ctx.config.server.trust_proxy),
  },
  {
    name: 'reset',
    register: (app, { ctx }) =>
      resetRoutes(app, {
        dataDir: ctx.config.data_dir,
        requestRestart: ctx.requestRestart,
        log: app.log,
      }),
  },
  {
    name: 'support',
    register: (app, { ctx }) => supportRoutes(app, { bundle: ctx.bundle, support: ctx.support }),
  },
  {
    name: 'webrtc',
    register: (app, { ctx }) => {
      // the same picture in H.265 for browsers that take it (janus/codecs.ts); idle until then
      const h265Feed = new HevcFeed(ctx.video, app.log, { ffmpeg: ctx.config.video.ffmpeg });
      app.addHook('onClose', () => h265Feed.dispose());
      registerJanus(app, {
        feed: ctx.video,
        h265Feed,
        // The device's own peer gathers host candidates and TURN relays only: a STUN round
        // trip holds werift's offer for 5 s when the STUN server is unreachable (an offline
        // device), and the browser's STUN (features.ice.url) already finds the public side.
        iceServers: () => ctx.turn.iceServers().filter((s) => s.urls.startsWith('turn')),
        features: () => janusFeatures(ctx.turn.iceServers(), ctx.audio.features()),
        ice: iceNetworkOf(ctx.config.webrtc),
        audio: ctx.audio,
        camera: ctx.cameraInput,
        onInput: (key, frame) => ctx.hid.handleFrame(rtcInputClient(key), frame),
        onViewerGone: (key) => ctx.hid.clientGone(rtcInputClient(key)),
        log: app.log,
        sockets: app.sockets,
        auth: {
          apiSecret: ctx.config.webrtc.janus_api_secret,
          tokenAuth: ctx.config.webrtc.janus_token_auth,
        },
      });
    },
  },
];
