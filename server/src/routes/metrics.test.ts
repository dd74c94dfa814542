import { afterEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { initAndLogin, newApp, PASSWORD } from '../test-helpers';
import { LatencyRing } from '../drivers/hid/write-latency';
import { Exposition, gpioMetricName } from './metrics';

let app: FastifyInstance | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

interface Family {
  type: string;
  samples: Array<{ labels: Record<string, string>; value: number }>;
}

/**
 * A strict reader of kvmd's exposition (text format 0.0.4 as kvmd's export API writes it):
 * every family is one `# TYPE` line, its samples, then one empty line; no `# HELP` or other
 * comment; names and label names valid; values Go floats. Throws on the first violation.
 */
function parseExposition(text: string): Map<string, Family> {
  if (!text.endsWith('\n')) throw new Error('no final line feed');
  const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
  const families = new Map<string, Family>();
  if (text.endsWith('\n\n')) throw new Error('an empty line at the end');
  const lines = text.slice(0, -1).split('\n');
  let current: string | null = null;
  for (const [i, line] of lines.entries()) {
    if (line === '') {
      if (current === null || families.get(current)!.samples.length === 0)
        throw new Error(`empty line ${i} not after a family`);
      current = null;
      continue;
    }
    if (line.startsWith('#')) {
      const meta = /^# TYPE (\S+) (\S+)$/.exec(line);
      if (!meta) throw new Error(`not kvmd's layout: ${line}`);
      const [, name, type] = meta as unknown as [string, string, string];
      if (current !== null) throw new Error(`TYPE of ${name} without the empty line before it`);
      if (!NAME.test(name)) throw new Error(`bad name ${name}`);
      if (families.has(name)) throw new Error(`second TYPE of ${name}`);
      if (!['counter', 'gauge', 'summary'].includes(type)) throw new Error(`bad type ${type}`);
      families.set(name, { type, samples: [] });
      current = name;
      continue;
    }
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`bad sample line: ${line}`);
    const [, name, rawLabels, rawValue] = m as unknown as [
      string,
      string,
      string | undefined,
      string,
    ];
    // a summary's samples: name{quantile=...}, name_sum, name_count
    const own =
      name === current ||
      (current !== null &&
        families.get(current)!.type === 'summary' &&
        (name === `${current}_sum` || name === `${current}_count`));
    if (!own) throw new Error(`sample of ${name} outside its family`);
    const labels: Record<string, string> = {};
    if (rawLabels) {
      const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"(,|$)/y;
      let pos = 0;
      while (pos < rawLabels.length) {
        re.lastIndex = pos;
        const lm = re.exec(rawLabels);
        if (!lm) throw new Error(`bad labels: ${rawLabels}`);
        labels[lm[1]!] = lm[2]!;
        pos = re.lastIndex;
      }
    }
    const value = /^(NaN|[+-]Inf)$/.test(rawValue)
      ? Number(rawValue.replace('Inf', 'Infinity'))
      : Number(rawValue);
    if (rawValue.trim() === '' || (Number.isNaN(value) && rawValue !== 'NaN')) {
      throw new Error(`bad value ${rawValue}`);
    }
    families.get(current!)!.samples.push({ labels, value });
  }
  // kvmd joins rows that end with an empty one: the last family ends with the final line feed
  if (current !== null && families.get(current)!.samples.length === 0)
    throw new Error(`${current} has no sample`);
  return families;
}

describe('Prometheus exposition', () => {
  it("writes kvmd's layout, escapes label values and reads back", () => {
    const text = new Exposition()
      .family('a_total', 'counter', [
        { labels: { path: 'x"y\\z\nw' }, value: 3 },
        { labels: { path: 'b' }, value: 1.5 },
      ])
      .family('b', 'gauge', true)
      .family('c', 'gauge', null)
      .toString();
    expect(text).toBe(
      '# TYPE a_total counter\na_total{path="x\\"y\\\\z\\nw"} 3\na_total{path="b"} 1.5\n\n' +
        '# TYPE b gauge\nb 1\n',
    );
    const f = parseExposition(text);
    expect(f.get('a_total')?.samples[0]?.labels['path']).toBe('x\\"y\\\\z\\nw');
    expect(f.get('b')?.samples).toEqual([{ labels: {}, value: 1 }]);
    expect(f.has('c')).toBe(false);
    expect(gpioMetricName('input', 'state', 'a.b-c')).toBe('pikvm_gpio_input_state_a_b_c');
  });

  it('writes a summary: quantile samples, then _sum and _count; none before the first', () => {
    const ring = new LatencyRing(4);
    const empty = new Exposition().summary('kvm_w_seconds', ring.summary()).toString();
    expect(empty).toBe(
      '# TYPE kvm_w_seconds summary\nkvm_w_seconds_sum 0\nkvm_w_seconds_count 0\n',
    );
    for (const s of [0.5, 0.125, 0.25, 0.375]) ring.record(s);
    const text = new Exposition()
      .summary('kvm_w_seconds', ring.summary())
      .summary('absent', undefined)
      .family('b', 'gauge', 1)
      .toString();
    expect(text).toBe(
      '# TYPE kvm_w_seconds summary\n' +
        'kvm_w_seconds{quantile="0.5"} 0.25\nkvm_w_seconds{quantile="0.9"} 0.5\n' +
        'kvm_w_seconds{quantile="0.99"} 0.5\nkvm_w_seconds_sum 1.25\nkvm_w_seconds_count 4\n\n' +
        '# TYPE b gauge\nb 1\n',
    );
    const f = parseExposition(text);
    expect(f.get('kvm_w_seconds')?.type).toBe('summary');
    expect(f.get('kvm_w_seconds')?.samples).toHaveLength(5);
    expect(f.has('absent')).toBe(false);
  });

  it('walks a state as kvmd does: sorted keys, numbers and booleans only', () => {
    const text = new Exposition()
      .tree('pikvm_hw', {
        temp: { cpu: null },
        mem: { total: 8, available: 2, percent: 75.5 },
        cpu: { percent: 12 },
        throttling: { parsed_flags: { undervoltage: { now: false } }, raw_flags: 0 },
      })
      .toString();
    expect(text.split('\n').filter((l) => l.startsWith('#'))).toEqual([
      '# TYPE pikvm_hw_cpu_percent gauge',
      '# TYPE pikvm_hw_mem_available gauge',
      '# TYPE pikvm_hw_mem_percent gauge',
      '# TYPE pikvm_hw_mem_total gauge',
      '# TYPE pikvm_hw_throttling_undervoltage_now gauge',
      '# TYPE pikvm_hw_throttling_raw_flags gauge',
    ]);
  });
});

describe('GET /api/export/prometheus/metrics', () => {
  it('answers a Prometheus scrape with valid 0.0.4 text and kvmd names', async () => {
    app = await newApp();
    const token = await initAndLogin(app);
    await app.inject({ url: '/api/gpio', headers: { token } });
    // What Prometheus sends (with a Basic header or, here, the token header).
    const res = await app.inject({
      url: '/api/export/prometheus/metrics',
      headers: {
        token,
        accept:
          'application/openmetrics-text;version=1.0.0;q=0.5,text/plain;version=0.0.4;q=0.4,*/*;q=0.1',
        'user-agent': 'Prometheus/2.53.0',
        'x-prometheus-scrape-timeout-seconds': '10',
      },
    });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(res.body).not.toContain('# HELP');
    // kvmd's families first, in kvmd's order and layout
    expect(
      res.body.startsWith(
        '# TYPE pikvm_atx_enabled gauge\npikvm_atx_enabled 0\n\n' +
          '# TYPE pikvm_atx_power gauge\npikvm_atx_power 0\n\n',
      ),
    ).toBe(true);
    const f = parseExposition(res.body);
    const names = [...f.keys()];
    const hw = names.filter((n) => n.startsWith('pikvm_hw_'));
    expect(hw).toEqual([...hw].sort());
    expect(names.indexOf('pikvm_fan_monitored')).toBe(names.indexOf(hw.at(-1)!) + 1);
    expect(f.get('pikvm_fan_monitored')?.samples).toEqual([{ labels: {}, value: 0 }]);
    expect(Number.isInteger(f.get('pikvm_hw_cpu_percent')!.samples[0]!.value)).toBe(true);
    for (const name of [
      'pikvm_atx_enabled',
      'pikvm_atx_power',
      'pikvm_hw_cpu_percent',
      'pikvm_hw_mem_percent',
      'pikvm_hw_mem_total',
      'kvm_streamer_online',
      'kvm_streamer_clients',
      'kvm_hid_online',
      'kvm_msd_online',
      'process_resident_memory_bytes',
      'process_cpu_seconds_total',
      'kvm_http_requests_total',
    ]) {
      expect(f.has(name), name).toBe(true);
    }
    expect(f.get('pikvm_atx_enabled')?.samples[0]?.value).toBe(0); // testbed: no ATX
    expect(f.get('process_cpu_seconds_total')?.type).toBe('counter');
    expect(f.get('process_resident_memory_bytes')!.samples[0]!.value).toBeGreaterThan(1e6);
    const gets = f
      .get('kvm_http_requests_total')!
      .samples.find((s) => s.labels['method'] === 'GET' && s.labels['code'] === '200');
    expect(gets?.value).toBeGreaterThanOrEqual(2); // init and /api/gpio
  });

  it('needs credentials: a scrape with basic_auth works, none is 401', async () => {
    app = await newApp();
    await initAndLogin(app, PASSWORD);
    const res = await app.inject({ url: '/api/export/prometheus/metrics' });
    expect(res.statusCode).toBe(401);
    const basic = await app.inject({
      url: '/api/export/prometheus/metrics',
      headers: {
        authorization: `Basic ${Buffer.from(`admin:${PASSWORD}`).toString('base64')}`,
        accept: 'text/plain;version=0.0.4;q=1,*/*;q=0.1',
      },
    });
    expect(basic.statusCode).toBe(200);
    expect(parseExposition(basic.body).has('pikvm_atx_enabled')).toBe(true);
  });
});
