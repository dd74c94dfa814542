/**
 * `npm run bench -- system`: device administration (issue 11), one JSON object. The servers are
 * the built ones in processes of their own (ServerProcess, as the e2e specs run them), driven
 * through the HTTP API only, with a token; the device's network is the testbed target's `netns`
 * driver (a namespace the server owns, dnsmasq as the LAN's router, docs/system.md).
 *
 * - dhcp_lease_ms: median of 5. From a confirmed static address, POST set_network_config
 *   mode=dhcp, POST confirm_network_config with the answer's pending id, then poll
 *   get_network_config (every 20 ms) until it shows DHCP with an address held (online, inside
 *   dnsmasq's range 192.168.8.100-199). From the request's start to the first such answer: the
 *   driver's flush, udhcpc's discover/offer/request/ack with dnsmasq, the address applied, the
 *   confirm's round trip.
 * - static_apply_ms: median of 5. From DHCP, POST set_network_config mode=static (a different
 *   address each time, 192.168.8.50+), from the request's start to the first get_network_config
 *   that shows that address (the answer comes once the driver applied it; the poll adds one
 *   round trip). Confirmed afterwards, outside the time.
 * - revert_after_s: one unconfirmed change (DHCP → static 192.168.8.60): seconds from the
 *   set_network_config answer until get_network_config shows the previous settings again (DHCP,
 *   an address in the range, no change pending), polled every 100 ms. The window is the server's
 *   `system.confirm_timeout_s`, printed as `confirm_timeout_s` beside it (the pending change's
 *   `timeout_s`): the default 60 s, 5 s in `--short` mode (read the figure against its window).
 * - edid_to_resolution_s: the qemu target's server (a fresh VM). Once the guest is up and the
 *   stream's source reports its resolution, POST /api/upgrade/edid with a preset of another
 *   mode (1920x1080, or 1600x1200 when the VM already shows 1920x1080), then press the VM's
 *   reset button (POST /api/atx/click?button=reset: the VM reads the EDID at its next power
 *   cycle, docs/system.md), then poll GET /api/streamer (every 100 ms) until
 *   `streamer.source.resolution` is the preset's mode. Seconds from the EDID's POST to that
 *   answer: QEMU restarted with the new display, the BIOS and the guest's kernel up to its
 *   framebuffer driver's mode set, the VNC resize seen by the server. The notes say which preset.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ServerProcess } from '../e2e/fixtures/server';
import { median, note, round, runMarks, sized, SHORT, initAndLogin } from './lib';

const PASSWORD = 'benchpass';
const RUNS = sized(5, 2);
/** dnsmasq's DHCP range in the LAN namespace (docs/system.md, netns). */
const LEASE_RE = /^192\.168\.8\.(1\d\d)$/;
/** The short mode's confirmation window (the config's least). */
const SHORT_CONFIRM_S = 5;

interface Envelope<T> {
  ok: boolean;
  result: T;
}

interface NetworkConfig {
  is_dhcp: boolean;
  ip_address: string;
  state: string;
  available: boolean;
  unavailable_reason: string | null;
  pending: { id: string; expires_at: number; timeout_s: number } | null;
}

/** A logged-in client of one server process. */
class Api {
  private constructor(
    readonly server: ServerProcess,
    private readonly token: string,
  ) {}

  static async login(server: ServerProcess): Promise<Api> {
    const token = await initAndLogin(server.url, PASSWORD);
    return new Api(server, token);
  }

  /** The answer's `result` (or the bare body when there is no envelope); throws on non-2xx. */
  async call<T>(
    method: 'GET' | 'POST',
    path: string,
    body?: { type: string; data: string },
  ): Promise<T> {
    const res = await fetch(`${this.server.url}${path}`, {
      method,
      headers: { token: this.token, ...(body ? { 'content-type': body.type } : {}) },
      ...(body ? { body: body.data } : {}),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
    const json = JSON.parse(text) as unknown;
    return (
      json && typeof json === 'object' && 'ok' in json ? (json as Envelope<T>).result : json
    ) as T;
  }

  async network(): Promise<NetworkConfig> {
    return (await this.call<{ config: NetworkConfig }>('GET', '/api/system/get_network_config'))
      .config;
  }

  /** POST set_network_config with this query; the answer's pending change. */
  async setNetwork(query: Record<string, string>): Promise<NetworkConfig['pending']> {
    const q = new URLSearchParams(query).toString();
    const res = await this.call<{ pending: NetworkConfig['pending'] }>(
      'POST',
      `/api/system/set_network_config?${q}`,
    );
    return res.pending;
  }

  async confirm(pending: NetworkConfig['pending']): Promise<void> {
    if (!pending) return;
    await this.call('POST', `/api/system/confirm_network_config?id=${pending.id}`);
  }
}

/** Polls `read` every `everyMs` until `done`; the time (performance.now()) of that answer. */
async function until<T>(
  what: string,
  read: () => Promise<T>,
  done: (v: T) => boolean,
  timeoutMs: number,
  everyMs = 20,
): Promise<{ at: number; value: T }> {
  const deadline = performance.now() + timeoutMs;
  let last: T | undefined;
  for (;;) {
    last = await read();
    if (done(last)) return { at: performance.now(), value: last };
    if (performance.now() > deadline) {
      throw new Error(`timed out: ${what}; last: ${JSON.stringify(last)}`);
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

const leaseHeld = (c: NetworkConfig): boolean =>
  c.is_dhcp && c.state === 'online' && LEASE_RE.test(c.ip_address);

const STATIC = (ip: string): Record<string, string> => ({
  mode: 'static',
  ip_address: ip,
  netmask: '255.255.255.0',
  gateway: '192.168.8.1',
});

interface NetworkFigures {
  dhcp_lease_ms: number;
  static_apply_ms: number;
  revert_after_s: number;
  confirm_timeout_s: number;
}

async function networkFigures(): Promise<NetworkFigures> {
  const server = await ServerProcess.start({
    target: 'testbed',
    ...(SHORT ? { config: `system:\n  confirm_timeout_s: ${SHORT_CONFIRM_S}\n` } : {}),
  });
  try {
    const api = await Api.login(server);
    // the testbed starts its namespaces at the first use: this read, then the first lease
    const first = await api.network();
    if (!first.available) throw new Error(`network unavailable: ${first.unavailable_reason}`);
    await until('the first DHCP lease', () => api.network(), leaseHeld, 30_000);

    const statics: number[] = [];
    const leases: number[] = [];
    for (let i = 0; i < RUNS; i += 1) {
      const ip = `192.168.8.${50 + i}`;
      let t0 = performance.now();
      let pending = await api.setNetwork(STATIC(ip));
      const answered = performance.now() - t0;
      const shown = await until(
        `static ${ip} shown`,
        () => api.network(),
        (c) => !c.is_dhcp && c.ip_address === ip,
        10_000,
      );
      statics.push(shown.at - t0);
      await api.confirm(pending);

      t0 = performance.now();
      pending = await api.setNetwork({ mode: 'dhcp' });
      const dhcpAnswered = performance.now() - t0;
      await api.confirm(pending);
      const held = await until('a DHCP lease', () => api.network(), leaseHeld, 15_000);
      leases.push(held.at - t0);
      note(
        `run ${i + 1}: static ${round(statics.at(-1)!)} ms shown (answer ${round(answered)} ms); ` +
          `dhcp ${round(leases.at(-1)!)} ms held (answer ${round(dhcpAnswered)} ms), ` +
          `lease ${held.value.ip_address}`,
      );
    }

    // unconfirmed: the previous settings (DHCP) come back by themselves
    const before = await until('a DHCP lease', () => api.network(), leaseHeld, 15_000);
    const change = await api.setNetwork(STATIC('192.168.8.60'));
    const t0 = performance.now();
    if (!change) throw new Error('a change of address answered without a pending change');
    const applied = await api.network();
    if (applied.is_dhcp || applied.ip_address !== '192.168.8.60') {
      throw new Error(`the static address was not in force: ${JSON.stringify(applied)}`);
    }
    const back = await until(
      'the unconfirmed change reverted',
      () => api.network(),
      (c) => leaseHeld(c) && c.pending === null,
      (change.timeout_s + 30) * 1000,
      100,
    );
    const revertS = (back.at - t0) / 1000;
    note(
      `revert: ${round(revertS, 2)} s after the answer (window ${change.timeout_s} s), ` +
        `lease ${before.value.ip_address} -> ${back.value.ip_address}`,
    );
    return {
      dhcp_lease_ms: round(median(leases)),
      static_apply_ms: round(median(statics)),
      revert_after_s: round(revertS, 2),
      // the window the server reported for this change
      confirm_timeout_s: change.timeout_s,
    };
  } catch (err) {
    note(`server log:\n${server.log.slice(-3000)}`);
    throw err;
  } finally {
    await server.dispose();
  }
}

interface EdidPreset {
  key: string;
  content: string;
}

interface StreamerAnswer {
  streamer: { source: { online: boolean; resolution: { width: number; height: number } } } | null;
}

async function edidFigure(): Promise<{ edid_to_resolution_s: number; edid_preset: string }> {
  const server = await ServerProcess.start({ target: 'qemu' });
  try {
    const api = await Api.login(server);
    const serial = async (): Promise<string> =>
      (await readFile(join(server.dataDir, 'run', 'serial.log'), 'utf8').catch(() => '')).replace(
        /\r/g,
        '',
      );
    await until('guest ready', serial, (s) => s.includes('guest ready'), 120_000, 200);
    const resolution = async (): Promise<string> => {
      const s = await api.call<StreamerAnswer>('GET', '/api/streamer');
      const r = s.streamer?.source.resolution;
      return s.streamer?.source.online && r ? `${r.width}x${r.height}` : '';
    };
    const start = await until('a resolution', resolution, (r) => r !== '', 30_000, 100);
    const want = start.value === '1920x1080' ? '1600x1200' : '1920x1080';
    const presets = await api.call<EdidPreset[]>('GET', '/api/upgrade/edid_list');
    const preset = presets.find((p) => p.key === `E${want}`);
    if (!preset) throw new Error(`no preset E${want} in ${presets.map((p) => p.key).join(', ')}`);

    const t0 = performance.now();
    await api.call('POST', '/api/upgrade/edid', {
      type: 'application/x-www-form-urlencoded',
      data: new URLSearchParams({ edid: preset.content }).toString(),
    });
    const posted = performance.now() - t0;
    await api.call('POST', '/api/atx/click?button=reset');
    const reset = performance.now() - t0;
    const shown = await until(`the stream at ${want}`, resolution, (r) => r === want, 180_000, 100);
    const s = (shown.at - t0) / 1000;
    note(
      `edid: ${start.value} -> ${want} in ${round(s, 2)} s (EDID answered ${round(posted)} ms, ` +
        `reset answered ${round(reset)} ms after the EDID's POST)`,
    );
    return { edid_to_resolution_s: round(s, 2), edid_preset: preset.key };
  } catch (err) {
    note(`server log:\n${server.log.slice(-3000)}`);
    throw err;
  } finally {
    await server.dispose();
  }
}

const net = await networkFigures();
const edid = await edidFigure();
process.stdout.write(
  `${JSON.stringify({
    ...runMarks(),
    dhcp_lease_ms: net.dhcp_lease_ms,
    static_apply_ms: net.static_apply_ms,
    revert_after_s: net.revert_after_s,
    confirm_timeout_s: net.confirm_timeout_s,
    edid_to_resolution_s: edid.edid_to_resolution_s,
  })}\n`,
);
note(`edid preset ${edid.edid_preset}`);
