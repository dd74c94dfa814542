/**
 * `npm run bench -- cloud [--short]`: the fleet's figures (issue 25, docs/cloud.md), one JSON
 * object. Real PostgreSQL, NATS, coturn and SMTP sink (e2e/fixtures/cloud.ts), two fleet
 * replicas A and B as real processes, and `agents` simulated device agents in this process:
 * real WebSockets over TLS (the fleet's certificate pinned as the only CA), speaking
 * protocol/src/cloud.ts's frames (hello, ping/pong, cmd/res, open/head/end), reconnecting with
 * the device agent's full-jitter backoff (AGENT_BACKOFF_BASE_MS .. AGENT_BACKOFF_MAX_MS) over
 * the endpoints the welcome lists. The account signs up through the fleet's API (the e-mail
 * code from the sink); its devices are inserted into PostgreSQL as a binding stores them (the
 * core's own id and hash functions), since 1,000 binds through the API would meet its rate
 * limits.
 *
 * - connect_storm_s: both replicas stopped (SIGTERM) with every agent online, started again;
 *   from the first replica answering again to the last agent welcomed.
 * - fleet_rss_mb_per_1000_agents: the replicas' RSS (VmRSS, summed) with every agent online
 *   minus the same before any agent connected (after the sign-up and the g2g run), per 1,000
 *   agents.
 * - command_rtt_p50_ms / _p99_ms: a command (`cmd` info, answered by the agent's `res`) for a
 *   device whose agent is on replica A, asked the way replica B asks it: the NATS request
 *   `kvm.dev.<id>.cmd` (B's bus.command) → A → agent → back. The fleet has no HTTP route that
 *   sends a command (the console's calls go through the tunnel: tunnel_api_rtt_ms), so no
 *   browser HTTP leg is in it.
 * - failover_s: replica A killed (SIGKILL) with its agents online; until the last of them is
 *   welcomed by B.
 * - tunnel_api_rtt_ms: median of an API call through the tunnel (browser → fleet B → NATS → A →
 *   agent → the device's own server → back): GET /d/<id>/api/info of a real device server
 *   (testbed target) bound to the fleet, its agent on A, the call on B.
 * - g2g_via_relay_p50_ms / _p95_ms / _samples: glass to glass (bench/g2g.ts, as video.ts's
 *   g2g_webrtc) of testbed video through coturn: a testbed device server in this process (its
 *   picture's change marker drawn here) bound to the fleet through its own /api/cloud/* (agent
 *   on A), Chromium signed in on B (the session cookie in its context) opening
 *   <B>/d/<id>/?ice=relay: WebRTC forced through the relay, signalling through the tunnel
 *   (B → NATS → A → agent → device). The figure fails unless every open peer connection's
 *   selected candidate pair has a local candidate of type `relay`. Measured before the
 *   simulated agents start (they share this process with the device's server).
 * - Part 2 (the fleet console: wall_refresh_s, wall_bytes_per_device_per_min,
 *   device_list_p95_ms, rollout_100_devices_s): bench/cloud-console.ts, last, with the agents
 *   above stopped.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { IncomingMessage } from 'node:http';
import WebSocket from 'ws';
import {
  AGENT_AUTH_SCHEME,
  AGENT_BACKOFF_BASE_MS,
  AGENT_BACKOFF_MAX_MS,
  AGENT_MAX_FRAME,
  AGENT_PATH,
  AGENT_PING_MS,
  DEVICE_SECRET_BYTES,
  FLEET_API,
  STREAM_KIND,
  encodeStreamFrame,
  parseAgentControl,
  type AgentControl,
  type DeviceIdentity,
} from '@kvm/protocol';
import { connect as natsConnect } from 'nats';
import { Browser } from '../e2e/fixtures/browser';
import { Cloud } from '../e2e/fixtures/cloud';
import { bindDeviceServer, devicePost, FleetHttp, signUpAndIn } from '../e2e/fixtures/fleet-http';
import { ServerProcess } from '../e2e/fixtures/server';
import { buildTestApp } from '../server/src/test-helpers';
import { sha256 } from '../fleet/src/accounts/accounts';
import { newDeviceId } from '../fleet/src/devices/devices';
import { consoleFigures } from './cloud-console';
import { firstFrame, glassToGlass, mediaPaths, openConsole, type G2g } from './g2g';
import { initAndLogin, machineSpeed, note, percentile, round, runMarks, sized } from './lib';

const AGENTS = sized(1000, 50);
const RTT_SAMPLES = sized(200, 20);

/** A device as the fleet knows it after binding. */
export interface SimDevice {
  id: string;
  secret: string;
  identity: DeviceIdentity;
}

/** The agent URL of an endpoint (a replica's base URL or already its agent URL). */
function agentUrl(endpoint: string): string {
  const u = new URL(endpoint);
  if (u.protocol === 'https:') u.protocol = 'wss:';
  if (!u.pathname.endsWith(AGENT_PATH)) u.pathname = AGENT_PATH;
  return u.toString();
}

/** One simulated device agent. */
class SimAgent {
  replica: string | null = null;
  onlineAt = 0;
  refused: number | null = null;
  private ws: WebSocket | null = null;
  private attempt = 0;
  private next = 0;
  private timer: NodeJS.Timeout | null = null;
  private pinger: NodeJS.Timeout | null = null;
  private stopped = false;

  constructor(
    readonly device: SimDevice,
    private endpoints: string[],
    private readonly ca: string,
    private readonly onWelcome: (a: SimAgent) => void,
  ) {}

  get online(): boolean {
    return this.replica !== null;
  }

  start(): void {
    this.stopped = false;
    this.connect();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.ws?.terminate();
  }

  private connect(): void {
    const url = agentUrl(this.endpoints[this.next % this.endpoints.length]!);
    this.next += 1;
    const ws = new WebSocket(url, {
      headers: {
        authorization: `${AGENT_AUTH_SCHEME} ${this.device.id}:${this.device.secret}`,
        'x-kvm-device-mac': this.device.identity.mac,
        'x-kvm-device-serial': this.device.identity.serial,
      },
      // the fleet's own certificate is the only CA trusted (the device pins it at binding),
      // verified with its host name (127.0.0.1 is in its subjectAltName)
      ca: this.ca,
      maxPayload: AGENT_MAX_FRAME,
      handshakeTimeout: 15_000,
      perMessageDeflate: false,
    });
    this.ws = ws;
    ws.on('open', () => {
      ws.send(JSON.stringify({ t: 'hello', version: 'bench', identity: this.device.identity }));
      this.pinger = setInterval(() => {
        if (ws.readyState === WebSocket.OPEN)
          ws.send(JSON.stringify({ t: 'ping', ts: Date.now() }));
      }, AGENT_PING_MS);
    });
    ws.on('unexpected-response', (_req, res: IncomingMessage) => {
      this.refused = res.statusCode ?? 0;
      res.resume();
      ws.terminate();
    });
    ws.on('message', (data: Buffer, isBinary: boolean) => {
      if (isBinary) return; // no stream carries a body toward a simulated device
      const frame = parseAgentControl(data.toString());
      if (!frame) {
        ws.close(1008);
        return;
      }
      this.onFrame(ws, frame);
    });
    ws.on('error', () => undefined);
    ws.on('close', () => {
      if (this.pinger) clearInterval(this.pinger);
      this.pinger = null;
      this.replica = null;
      if (this.ws === ws) this.ws = null;
      if (!this.stopped) this.schedule();
    });
  }

  /** Full jitter: a random delay in 0 .. min(max, base·2^attempt). */
  private schedule(): void {
    const cap = Math.min(AGENT_BACKOFF_MAX_MS, AGENT_BACKOFF_BASE_MS * 2 ** this.attempt);
    this.attempt += 1;
    this.timer = setTimeout(() => this.connect(), Math.random() * cap);
  }

  private send(ws: WebSocket, frame: AgentControl): void {
    ws.send(JSON.stringify(frame));
  }

  private onFrame(ws: WebSocket, f: AgentControl): void {
    switch (f.t) {
      case 'welcome':
        this.replica = f.replica;
        this.attempt = 0;
        this.refused = null;
        // the welcome lists this replica first: after a drop, try the next one first
        if (f.endpoints.length > 0) this.endpoints = f.endpoints;
        this.next = 1;
        this.onlineAt = performance.now();
        this.onWelcome(this);
        return;
      case 'ping':
        this.send(ws, { t: 'pong', ts: f.ts });
        return;
      case 'cmd':
        this.send(ws, {
          t: 'res',
          id: f.id,
          ok: true,
          result: { name: this.device.identity.name, at: Date.now() },
        });
        return;
      case 'open': {
        // a tunnelled request: a small JSON answer, as the device's /api/info would give
        const body = Buffer.from(JSON.stringify({ ok: true, result: { device: this.device.id } }));
        this.send(ws, {
          t: 'head',
          sid: f.sid,
          status: f.kind === 'ws' ? 403 : 200,
          headers: { 'content-type': 'application/json', 'content-length': String(body.length) },
        });
        if (f.kind === 'http') ws.send(encodeStreamFrame(f.sid, STREAM_KIND.data, body));
        this.send(ws, { t: 'end', sid: f.sid });
        return;
      }
      case 'unbound':
        this.stop();
        return;
      default:
        return;
    }
  }
}

/** Resolves once `pred` holds (checked every 50 ms), or rejects after `timeoutMs`. */
async function until(what: string, pred: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!pred()) {
    if (performance.now() > deadline) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** VmRSS of a process in MB (0 when it is gone). */
function rssMb(pid: number | undefined): number {
  if (!pid) return 0;
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : 0;
  } catch {
    return 0;
  }
}

const FLEET_USER = 'bench.owner';
const FLEET_EMAIL = 'owner@bench.test';
const FLEET_PW = 'bench-pw1';
const BENCH_ACCOUNT = { username: FLEET_USER, email: FLEET_EMAIL, password: FLEET_PW };

/** Signs the bench's account up on `http`'s replica and signs it in: its id. */
async function signUpBench(cloud: Cloud, http: FleetHttp): Promise<string> {
  await signUpAndIn(cloud.smtp!, http, BENCH_ACCOUNT);
  const [row] = await cloud.query<{ id: string }>('SELECT id FROM accounts WHERE username = $1', [
    FLEET_USER,
  ]);
  if (!row) throw new Error('the account is not in the database');
  return row.id;
}

/**
 * `n` devices of `accountId`, inserted as a binding stores them (the secret's SHA-256, the
 * hardware fingerprint), in one statement: binding 1,000 devices through the API would measure
 * the bind rate limits, not the agents.
 */
async function insertDevices(cloud: Cloud, accountId: string, n: number): Promise<SimDevice[]> {
  const devices = Array.from({ length: n }, (_, i) => {
    const hex = i.toString(16).padStart(6, '0');
    return {
      id: newDeviceId(),
      secret: randomBytes(DEVICE_SECRET_BYTES).toString('base64url'),
      identity: {
        mac: `02:be:0c:${hex.slice(0, 2)}:${hex.slice(2, 4)}:${hex.slice(4, 6)}`,
        serial: `BENCH${hex}`,
        name: `bench-${i}`,
        model: 'bench',
        version: 'bench',
      },
    };
  });
  await cloud.query(
    `INSERT INTO devices (id, account_id, name, mac, serial, model, version, secret_hash)
     SELECT d.id, $1, d.name, d.mac, d.serial, 'bench', 'bench', d.hash
     FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[])
       AS d(id, name, mac, serial, hash)`,
    [
      accountId,
      devices.map((d) => d.id),
      devices.map((d) => d.identity.name),
      devices.map((d) => d.identity.mac),
      devices.map((d) => d.identity.serial),
      devices.map((d) => sha256(d.secret)),
    ],
  );
  return devices;
}

/**
 * A testbed device server bound to the bench account (bindDeviceServer), then RTT_SAMPLES GETs of
 * /d/<id>/api/info on B: ms each.
 */
async function tunnelApiRtt(cloud: Cloud, onB: FleetHttp): Promise<number[]> {
  const server = await ServerProcess.start({ target: 'testbed' });
  try {
    const token = await initAndLogin(server.url, 'benchpass');
    const id = await bindDeviceServer(cloud, server.url, token, BENCH_ACCOUNT);
    const out: number[] = [];
    for (let i = 0; i < RTT_SAMPLES + 3; i += 1) {
      const t = performance.now();
      await onB.ok('GET', `/d/${id}/api/info`);
      // the first calls open the device's console session: not a steady figure
      if (i >= 3) out.push(performance.now() - t);
    }
    return out;
  } finally {
    await server.dispose();
  }
}

/**
 * Glass to glass through coturn: a testbed device server in this process (so its picture's
 * marker is drawn here) bound to the fleet (agent on A), video as bench/video.ts measures
 * g2g_webrtc (1280x720, 60 fps, 5000 kbit/s, low latency first), the console opened on B at
 * /d/<id>/?ice=relay by a Chromium whose context holds B's session cookie. Throws unless the
 * media's selected candidate pair is relayed.
 */
async function g2gViaRelay(cloud: Cloud): Promise<G2g> {
  const dataDir = await mkdtemp(join(tmpdir(), 'kvm-bench-cloud-g2g-'));
  const app = await buildTestApp(dataDir, { testbed: { width: 1280, height: 720 } });
  let browser: Browser | null = null;
  try {
    await app.listen({ host: '127.0.0.1', port: 0 });
    const addr = app.server.address();
    const base = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
    const testbed = app.ctx.drivers.testbed;
    if (!testbed) throw new Error('no testbed');
    const token = await initAndLogin(base, 'benchpass');
    await devicePost(base, token, '/api/system/set_config', { video_mode: 'webrtc' });
    const params = await fetch(
      `${base}/api/streamer/set_params?h264_bitrate=5000&h264_gop=60&desired_fps=60&video_processing=low_latency_first`,
      { method: 'POST', headers: { token } },
    );
    if (!params.ok) throw new Error(`set_params: ${params.status}`);
    const id = await bindDeviceServer(cloud, base, token, BENCH_ACCOUNT);

    // the fleet's certificate is self-signed: accepted as a user who clicked through
    browser = await Browser.launch({ ignoreHttpsErrors: true });
    const login = await browser.context.request.post(`${cloud.b.url}${FLEET_API}/login`, {
      data: { username: FLEET_USER, password: FLEET_PW },
    });
    if (!login.ok()) throw new Error(`fleet login: HTTP ${login.status()} ${await login.text()}`);
    const page = await openConsole(browser, `${cloud.b.url}/d/${id}/?ice=relay`);
    await firstFrame(page, 60_000);
    const paths = await mediaPaths(page);
    if (paths.length === 0 || paths.some((p) => p !== 'relay'))
      throw new Error(`the media is not relayed: selected local candidates [${paths.join(', ')}]`);
    note(`cloud g2g: selected local candidates [${paths.join(', ')}]`);
    const relayed = await glassToGlass(page, testbed.picture, 'via relay', 'webrtc');
    // the same device's own console at once after, for comparison in the notes (not a figure:
    // bench/video.ts's g2g_webrtc is)
    const local = await openConsole(browser, `${base}/`, token);
    await firstFrame(local);
    const direct = await glassToGlass(local, testbed.picture, 'same device, own console', 'webrtc');
    note(
      `cloud g2g: via relay p50 ${round(relayed.p50)} p95 ${round(relayed.p95)} ms; the device's ` +
        `own console p50 ${round(direct.p50)} p95 ${round(direct.p95)} ms`,
    );
    return relayed;
  } finally {
    await browser?.close();
    await app.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const speed = machineSpeed();
  const cloud = await Cloud.start({ replicas: 2 });
  const agents: SimAgent[] = [];
  const https: FleetHttp[] = [];
  try {
    const ca = readFileSync(cloud.a.config.tls.cert, 'utf8');
    const onB = new FleetHttp(cloud.b.url, ca);
    https.push(onB);
    const accountId = await signUpBench(cloud, onB);
    // glass to glass through coturn (the device's agent on A, the browser on B) before the
    // simulated agents start: they run in this process, the device's server too, and their
    // pings and TLS would delay its frames, which no real device shares its CPU with
    const g2g = await g2gViaRelay(cloud);
    await new Promise((r) => setTimeout(r, 1000));
    const rss0 = rssMb(cloud.a.pid) + rssMb(cloud.b.pid);
    const devices = await insertDevices(cloud, accountId, AGENTS);
    note(`cloud: replicas ${cloud.a.url} ${cloud.b.url}; ${AGENTS} devices inserted`);

    // every agent starts on A (the browser will be on B)
    const t0 = performance.now();
    for (const d of devices) {
      agents.push(new SimAgent(d, [cloud.a.url], ca, () => undefined));
    }
    for (const a of agents) a.start();
    const allOnline = (replica?: string) =>
      agents.every((a) => a.online && (!replica || a.replica === replica));
    await until('every agent online on A', () => allOnline(cloud.a.config.replica), 180_000);
    const initialS = (performance.now() - t0) / 1000;
    note(`cloud: ${AGENTS} agents online on A in ${round(initialS, 2)} s (first connection)`);
    await new Promise((r) => setTimeout(r, 2000));
    const rss1 = rssMb(cloud.a.pid) + rssMb(cloud.b.pid);
    const rssPer1000 = ((rss1 - rss0) * 1000) / AGENTS;

    // command round trip across replicas: the request replica B's bus sends for a device whose
    // socket is on A (kvm.dev.<id>.cmd on NATS → A → the agent's `res` → back)
    const nc = await natsConnect({ servers: cloud.nats!.url });
    const cmdRtt: number[] = [];
    try {
      for (let i = 0; i < RTT_SAMPLES; i += 1) {
        const d = devices[i % devices.length]!;
        const t = performance.now();
        const m = await nc.request(
          `kvm.dev.${d.id}.cmd`,
          Buffer.from(JSON.stringify({ name: 'info', timeoutMs: 10_000 })),
          { timeout: 12_000 },
        );
        cmdRtt.push(performance.now() - t);
        const answer = JSON.parse(Buffer.from(m.data).toString()) as { ok?: boolean };
        if (answer.ok !== true) throw new Error(`command: ${JSON.stringify(answer)}`);
      }
    } finally {
      await nc.close();
    }

    // an API call through the tunnel to a real device server (testbed), its agent on A, the
    // call on B as the browser makes it
    const tunnelRtt = await tunnelApiRtt(cloud, onB);

    // failover: A killed with every agent on it
    const tKill = performance.now();
    await cloud.killReplica(0);
    await until('every agent back on B', () => allOnline(cloud.b.config.replica), 180_000);
    const failoverS = (performance.now() - tKill) / 1000;
    note(`cloud: failover ${round(failoverS, 2)} s`);

    // a fleet restart: both replicas stopped, started again
    await cloud.startReplica(0);
    await Promise.all([cloud.replica(0).stop(), cloud.replica(1).stop()]);
    const tDown = performance.now();
    await cloud.startReplica(0);
    const tUp = performance.now();
    await cloud.startReplica(1);
    await until('every agent back after the restart', () => allOnline(), 300_000);
    const stormS = (performance.now() - tUp) / 1000;
    note(
      `cloud: restart: down ${round((tUp - tDown) / 1000, 2)} s, every agent back ` +
        `${round(stormS, 2)} s after the first replica answered`,
    );

    // part 2 (the fleet console): its own simulated devices; part 1's agents stop first, so
    // that their pings and reconnections are not in these figures
    for (const a of agents) a.stop();
    await until('every agent gone', () => agents.every((a) => !a.online), 30_000);
    const part2 = await consoleFigures(cloud, onB, { ...BENCH_ACCOUNT, id: accountId }, ca);

    const out = {
      ...runMarks(),
      agents: AGENTS,
      connect_storm_s: round(stormS, 2),
      fleet_rss_mb_per_1000_agents: round(rssPer1000, 1),
      command_rtt_p50_ms: round(percentile(cmdRtt, 50), 2),
      command_rtt_p99_ms: round(percentile(cmdRtt, 99), 2),
      command_rtt_samples: cmdRtt.length,
      failover_s: round(failoverS, 2),
      tunnel_api_rtt_ms: round(percentile(tunnelRtt, 50), 2),
      tunnel_api_rtt_samples: tunnelRtt.length,
      g2g_via_relay_p50_ms: round(g2g.p50),
      g2g_via_relay_p95_ms: round(g2g.p95),
      g2g_via_relay_samples: g2g.samples,
      g2g_via_relay_outliers: g2g.outliers,
      g2g_via_relay_missed: g2g.missed,
      ...part2,
      ...speed,
    };
    process.stdout.write(`${JSON.stringify(out)}\n`);
  } finally {
    for (const a of agents) a.stop();
    for (const h of https) h.close();
    await cloud.dispose();
  }
}

await main();
// The in-process device's relayed peer leaves werift's TURN client asleep in its allocation
// refresh loop (5/6 of the 600 s lifetime: a 500 s timer its cancel does not clear): the
// figures are printed and everything this bench started is stopped, so do not wait it out.
process.exit(0);
