/**
 * `GET /api/export/prometheus/metrics` (kvmd's export API, wire-protocol.md 1.8): Prometheus
 * text exposition 0.0.4, every family with `# HELP` and `# TYPE`. kvmd's names where kvmd has
 * the value (`pikvm_atx_*`, `pikvm_gpio_*`, `pikvm_hw_*`), `kvm_*` for ours, and the client
 * libraries' standard `process_*` names.
 */
import { readFile } from 'node:fs/promises';
import { cpus, freemem, totalmem } from 'node:os';
import type { FastifyInstance } from 'fastify';
import type { AtxService } from '../services/atx/atx-service';
import type { GpioService } from '../services/gpio/gpio-service';
import type { HidService } from '../services/hid/hid-service';
import type { MsdService } from '../services/msd/msd-service';
import type { StreamerService } from '../services/streamer';

export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

type Labels = Record<string, string>;
interface Sample {
  labels?: Labels;
  value: number;
}

const escapeHelp = (s: string): string => s.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
const escapeLabel = (s: string): string =>
  s.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');

function formatValue(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  return String(v);
}

/** The exposition, built one family at a time. */
export class Exposition {
  private readonly lines: string[] = [];
  private readonly seen = new Set<string>();

  family(
    name: string,
    type: 'gauge' | 'counter',
    help: string,
    samples: Sample[] | number | boolean | null | undefined,
  ): this {
    if (samples === null || samples === undefined || this.seen.has(name)) return this;
    const list: Sample[] = typeof samples === 'object' ? samples : [{ value: Number(samples) }];
    if (list.length === 0) return this;
    this.seen.add(name);
    this.lines.push(`# HELP ${name} ${escapeHelp(help)}`, `# TYPE ${name} ${type}`);
    for (const s of list) {
      const labels = Object.entries(s.labels ?? {})
        .map(([k, v]) => `${k}="${escapeLabel(v)}"`)
        .join(',');
      this.lines.push(`${name}${labels ? `{${labels}}` : ''} ${formatValue(s.value)}`);
    }
    return this;
  }

  toString(): string {
    return `${this.lines.join('\n')}\n`;
  }
}

/** kvmd's metric name of a GPIO channel: every non-word character becomes `_`. */
export function gpioMetricName(mode: 'input' | 'output', key: string, channel: string): string {
  return `pikvm_gpio_${mode}_${key}_${channel.replace(/[^\w]/g, '_')}`;
}

async function cpuTemp(): Promise<number | null> {
  try {
    const milli = Number((await readFile('/sys/class/thermal/thermal_zone0/temp', 'utf8')).trim());
    return Number.isFinite(milli) ? milli / 1000 : null;
  } catch {
    return null;
  }
}

async function memAvailable(): Promise<number> {
  try {
    const m = /^MemAvailable:\s+(\d+) kB/m.exec(await readFile('/proc/meminfo', 'utf8'));
    if (m) return Number(m[1]) * 1024;
  } catch {
    // not Linux: the free memory is the nearest figure
  }
  return freemem();
}

function cpuTimes(): { busy: number; total: number } {
  let busy = 0;
  let total = 0;
  for (const c of cpus()) {
    const t = c.times.user + c.times.nice + c.times.sys + c.times.irq;
    busy += t;
    total += t + c.times.idle;
  }
  return { busy, total };
}

export function metricsRoutes(
  app: FastifyInstance,
  deps: {
    atx: AtxService;
    gpio: GpioService;
    streamer: StreamerService;
    hid: HidService;
    msd: MsdService;
  },
): void {
  // Requests by method and status: both label sets are small and fixed.
  const requests = new Map<string, number>();
  app.addHook('onResponse', async (request, reply) => {
    const method = METHODS.has(request.method) ? request.method : 'other';
    const key = `${method} ${reply.statusCode}`;
    requests.set(key, (requests.get(key) ?? 0) + 1);
  });
  const startS = Math.round(Date.now() / 1000 - process.uptime());
  // The CPU percent of kvmd's health is over the time since the last look.
  let lastCpu = cpuTimes();

  app.get('/api/export/prometheus/metrics', async (_request, reply) => {
    const atx = deps.atx.getState();
    const gpio = deps.gpio.getState().state;
    const streamer = deps.streamer.getState().streamer;
    const hid = deps.hid.getState();
    const msd = deps.msd.getState();
    const now = cpuTimes();
    const cpuPercent =
      now.total > lastCpu.total
        ? Math.round((1000 * (now.busy - lastCpu.busy)) / (now.total - lastCpu.total)) / 10
        : 0;
    lastCpu = now;
    const total = totalmem();
    const available = await memAvailable();
    const usage = process.cpuUsage();
    const ex = new Exposition()
      .family('pikvm_atx_enabled', 'gauge', 'ATX control is available (1) or not (0).', atx.enabled)
      .family('pikvm_atx_power', 'gauge', 'The power LED of the remote computer.', atx.leds.power)
      .family('kvm_atx_hdd', 'gauge', 'The disk activity LED of the remote computer.', atx.leds.hdd)
      .family('kvm_atx_busy', 'gauge', 'An ATX button press is running.', atx.busy);
    for (const mode of ['input', 'output'] as const) {
      for (const [ch, st] of Object.entries(gpio[`${mode}s`])) {
        if (ch.startsWith('__')) continue; // kvmd hides its special channels
        ex.family(
          gpioMetricName(mode, 'online', ch),
          'gauge',
          `GPIO ${mode} ${ch} is online.`,
          st.online,
        );
        ex.family(
          gpioMetricName(mode, 'state', ch),
          'gauge',
          `GPIO ${mode} ${ch} state.`,
          st.state,
        );
      }
    }
    ex.family('pikvm_hw_temp_cpu', 'gauge', 'CPU temperature, degrees Celsius.', await cpuTemp())
      .family(
        'pikvm_hw_cpu_percent',
        'gauge',
        'CPU use since the previous scrape, percent.',
        cpuPercent,
      )
      .family(
        'pikvm_hw_mem_percent',
        'gauge',
        'Memory in use, percent.',
        total > 0 ? Math.round((1000 * (total - available)) / total) / 10 : 0,
      )
      .family('pikvm_hw_mem_total', 'gauge', 'Total memory, bytes.', total)
      .family('pikvm_hw_mem_available', 'gauge', 'Available memory, bytes.', available)
      .family(
        'kvm_streamer_online',
        'gauge',
        'The video source delivers frames.',
        streamer?.source.online ?? false,
      )
      .family(
        'kvm_streamer_captured_fps',
        'gauge',
        'Frames per second captured from the source.',
        streamer?.source.captured_fps ?? 0,
      )
      .family(
        'kvm_streamer_h264_fps',
        'gauge',
        'H.264 frames per second encoded.',
        streamer?.h264.fps ?? 0,
      )
      .family(
        'kvm_streamer_clients',
        'gauge',
        'Video viewers connected.',
        streamer?.stream.clients ?? 0,
      )
      .family('kvm_hid_online', 'gauge', 'The keyboard and mouse gadget is online.', hid.online)
      .family('kvm_hid_keyboard_online', 'gauge', 'The keyboard is online.', hid.keyboard.online)
      .family('kvm_hid_mouse_online', 'gauge', 'The mouse is online.', hid.mouse.online)
      .family('kvm_msd_enabled', 'gauge', 'Virtual media is enabled.', msd.enabled)
      .family('kvm_msd_online', 'gauge', 'Virtual media is online.', msd.online)
      .family('kvm_msd_busy', 'gauge', 'A virtual media operation is running.', msd.busy)
      .family(
        'kvm_msd_connected',
        'gauge',
        'An image is lent to the remote computer.',
        msd.drive.connected,
      )
      .family(
        'process_resident_memory_bytes',
        'gauge',
        'Resident memory size in bytes.',
        process.memoryUsage.rss(),
      )
      .family(
        'process_cpu_seconds_total',
        'counter',
        'Total user and system CPU time spent in seconds.',
        (usage.user + usage.system) / 1e6,
      )
      .family(
        'process_start_time_seconds',
        'gauge',
        'Start time of the process since unix epoch in seconds.',
        startS,
      )
      .family(
        'kvm_http_requests_total',
        'counter',
        'HTTP requests answered, by method and status code.',
        [...requests].map(([k, value]) => {
          const [method = '', code = ''] = k.split(' ');
          return { labels: { method, code }, value };
        }),
      );
    return reply.header('content-type', PROMETHEUS_CONTENT_TYPE).send(ex.toString());
  });
}
