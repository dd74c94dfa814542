/**
 * `GET /api/export/prometheus/metrics` (kvmd's export API, wire-protocol.md 1.8): the text
 * exposition exactly as kvmd writes it (issue 21, item 12): `text/plain; charset=utf-8`, each
 * family a `# TYPE` line, its samples and an empty line, no `# HELP` lines. kvmd's families
 * first, in kvmd's order and with kvmd's names (`pikvm_atx_*`, `pikvm_gpio_*`, `pikvm_hw_*` from
 * the health state's sorted keys, `pikvm_fan_*`), then ours (`kvm_*`) and the client libraries'
 * standard `process_*` names in the same layout.
 */
import { readFile } from 'node:fs/promises';
import { freemem, totalmem } from 'node:os';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { LatencySummary } from '../drivers/hid/types';
import type { AtxService } from '../services/atx/atx-service';
import type { GpioService } from '../services/gpio/gpio-service';
import type { HidService } from '../services/hid/hid-service';
import type { MsdService } from '../services/msd/msd-service';
import { CpuMeter } from '../services/cpu-meter';
import type { StreamerService } from '../services/streamer';

/** What kvmd's aiohttp `Response(text=...)` sends (the text format 0.0.4, unversioned). */
export const PROMETHEUS_CONTENT_TYPE = 'text/plain; charset=utf-8';

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

type Labels = Record<string, string>;
interface Sample {
  labels?: Labels;
  value: number;
}

const escapeLabel = (s: string): string =>
  s.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');

function formatValue(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  return String(v);
}

/** The exposition, built one family at a time in kvmd's layout. */
export class Exposition {
  private readonly lines: string[] = [];
  private readonly seen = new Set<string>();

  /** A family of samples; null or undefined (kvmd: a value that is not a number) is left out. */
  family(
    name: string,
    type: 'gauge' | 'counter',
    samples: Sample[] | number | boolean | null | undefined,
  ): this {
    if (samples === null || samples === undefined || this.seen.has(name)) return this;
    const list: Sample[] = typeof samples === 'object' ? samples : [{ value: Number(samples) }];
    if (list.length === 0) return this;
    this.seen.add(name);
    this.lines.push(`# TYPE ${name} ${type}`);
    for (const s of list) {
      const labels = Object.entries(s.labels ?? {})
        .map(([k, v]) => `${k}="${escapeLabel(v)}"`)
        .join(',');
      this.lines.push(`${name}${labels ? `{${labels}}` : ''} ${formatValue(s.value)}`);
    }
    this.lines.push('');
    return this;
  }

  /**
   * A Prometheus summary: `name{quantile="q"}` samples, then `name_sum` and `name_count`; left
   * out when undefined. Quantiles are absent before the first observation (count 0).
   */
  summary(name: string, s: LatencySummary | undefined): this {
    if (!s || this.seen.has(name)) return this;
    this.seen.add(name);
    this.lines.push(`# TYPE ${name} summary`);
    for (const q of s.quantiles) {
      this.lines.push(`${name}{quantile="${q.quantile}"} ${formatValue(q.value)}`);
    }
    this.lines.push(`${name}_sum ${formatValue(s.sum)}`, `${name}_count ${s.count}`, '');
    return this;
  }

  /**
   * kvmd's walk of a state object (`__append_prometheus_rows`): numbers and booleans are gauges
   * named by the path of keys (sorted at every level), anything else is skipped.
   */
  tree(path: string, value: unknown): this {
    if (typeof value === 'boolean' || typeof value === 'number')
      return this.family(path, 'gauge', value);
    if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
      for (const key of Object.keys(value).sort()) {
        this.tree(
          key === 'parsed_flags' ? path : `${path}_${key}`,
          (value as Record<string, unknown>)[key],
        );
      }
    }
    return this;
  }

  toString(): string {
    return this.lines.join('\n');
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

/**
 * Requests by method and status (both label sets small and fixed). Its hook sees every route of
 * the app, so app.ts adds it at the root, not in the metrics plugin's scope.
 */
export class RequestCounter {
  readonly counts = new Map<string, number>();

  readonly onResponse = async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const method = METHODS.has(request.method) ? request.method : 'other';
    const key = `${method} ${reply.statusCode}`;
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
  };
}

export function metricsRoutes(
  app: FastifyInstance,
  deps: {
    atx: AtxService;
    gpio: GpioService;
    streamer: StreamerService;
    hid: HidService;
    msd: MsdService;
    requests: RequestCounter;
  },
): void {
  const requests = deps.requests.counts;
  const startS = Math.round(Date.now() / 1000 - process.uptime());
  // The CPU percent of kvmd's health is over the time since the last look.
  const cpu = new CpuMeter();

  app.get('/api/export/prometheus/metrics', async (_request, reply) => {
    const atx = deps.atx.getState();
    const gpio = deps.gpio.getState().state;
    const streamer = deps.streamer.getState().streamer;
    const hid = deps.hid.getState();
    const msd = deps.msd.getState();
    const spent = cpu.since();
    // kvmd's health: a whole percent (it truncates)
    const cpuPercent = spent.total > 0 ? Math.trunc((100 * spent.busy) / spent.total) : 0;
    const total = totalmem();
    const available = await memAvailable();
    const usage = process.cpuUsage();
    const ex = new Exposition()
      .family('pikvm_atx_enabled', 'gauge', atx.enabled)
      .family('pikvm_atx_power', 'gauge', atx.leds.power);
    for (const mode of ['input', 'output'] as const) {
      for (const [ch, st] of Object.entries(gpio[`${mode}s`])) {
        if (ch.startsWith('__')) continue; // kvmd hides its special channels
        // kvmd writes the state under both names (a slip of its loop); online is the online flag here
        ex.family(gpioMetricName(mode, 'online', ch), 'gauge', st.online);
        ex.family(gpioMetricName(mode, 'state', ch), 'gauge', st.state);
      }
    }
    // kvmd's health state (info `health`), walked as kvmd walks it: sorted keys, nulls left out
    ex.tree('pikvm_hw', {
      temp: { cpu: await cpuTemp() },
      cpu: { percent: cpuPercent },
      mem: {
        percent: total > 0 ? Math.round((1000 * (total - available)) / total) / 10 : 0,
        total,
        available,
      },
      throttling: null,
    })
      // kvmd's fan state without a fan daemon: {monitored: false, state: null}
      .tree('pikvm_fan', { monitored: false, state: null })
      .family('kvm_atx_hdd', 'gauge', atx.leds.hdd)
      .family('kvm_atx_busy', 'gauge', atx.busy)
      .family('kvm_streamer_online', 'gauge', streamer?.source.online ?? false)
      .family('kvm_streamer_captured_fps', 'gauge', streamer?.source.captured_fps ?? 0)
      .family('kvm_streamer_h264_fps', 'gauge', streamer?.h264.fps ?? 0)
      .family('kvm_streamer_clients', 'gauge', streamer?.stream.clients ?? 0)
      .family('kvm_hid_online', 'gauge', hid.online)
      .family('kvm_hid_keyboard_online', 'gauge', hid.keyboard.online)
      .family('kvm_hid_mouse_online', 'gauge', hid.mouse.online)
      .summary('kvm_hid_gadget_write_seconds', deps.hid.driver.keyWriteLatency?.())
      .family('kvm_msd_enabled', 'gauge', msd.enabled)
      .family('kvm_msd_online', 'gauge', msd.online)
      .family('kvm_msd_busy', 'gauge', msd.busy)
      .family('kvm_msd_connected', 'gauge', msd.drive.connected)
      .family('process_resident_memory_bytes', 'gauge', process.memoryUsage.rss())
      .family('process_cpu_seconds_total', 'counter', (usage.user + usage.system) / 1e6)
      .family('process_start_time_seconds', 'gauge', startS)
      .family(
        'kvm_http_requests_total',
        'counter',
        [...requests].map(([k, value]) => {
          const [method = '', code = ''] = k.split(' ');
          return { labels: { method, code }, value };
        }),
      );
    return reply.header('content-type', PROMETHEUS_CONTENT_TYPE).send(ex.toString());
  });
}
