import { afterEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { initAndLogin, newApp, PASSWORD } from '../test-helpers';
import { Exposition, gpioMetricName } from './metrics';

let app: FastifyInstance | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

interface Family {
  type: string;
  help: string;
  samples: Array<{ labels: Record<string, string>; value: number }>;
}

/**
 * A strict reader of the text format 0.0.4: every family has one HELP and one TYPE before its
 * samples, samples of one family are contiguous, names and label names are valid, values are
 * Go floats. Throws on the first violation.
 */
function parseExposition(text: string): Map<string, Family> {
  if (!text.endsWith('\n')) throw new Error('no final line feed');
  const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
  const families = new Map<string, Family>();
  let current: string | null = null;
  for (const line of text.slice(0, -1).split('\n')) {
    if (line === '') continue;
    const meta = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line);
    if (meta) {
      const [, kind, name, rest] = meta as unknown as [string, string, string, string];
      if (!NAME.test(name)) throw new Error(`bad name ${name}`);
      const f = families.get(name) ?? { type: '', help: '', samples: [] };
      if (f.samples.length > 0) throw new Error(`${kind} after samples of ${name}`);
      if (kind === 'TYPE') {
        if (f.type) throw new Error(`second TYPE of ${name}`);
        if (!['counter', 'gauge', 'histogram', 'summary', 'untyped'].includes(rest)) {
          throw new Error(`bad type ${rest}`);
        }
        f.type = rest;
      } else {
        if (f.help) throw new Error(`second HELP of ${name}`);
        if (!/^(?:[^\\]|\\[\\n])*$/.test(rest)) throw new Error(`bad escape in HELP of ${name}`);
        f.help = rest;
      }
      families.set(name, f);
      current = name;
      continue;
    }
    if (line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: -?\d+)?$/.exec(line);
    if (!m) throw new Error(`bad sample line: ${line}`);
    const [, name, rawLabels, rawValue] = m as unknown as [
      string,
      string,
      string | undefined,
      string,
    ];
    if (name !== current) throw new Error(`sample of ${name} outside its family`);
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
    families.get(name)!.samples.push({ labels, value });
  }
  for (const [name, f] of families) {
    if (!f.type || !f.help) throw new Error(`${name} lacks TYPE or HELP`);
  }
  return families;
}

describe('Prometheus exposition', () => {
  it('escapes help and label values and reads back', () => {
    const text = new Exposition()
      .family('a_total', 'counter', 'back\\slash\nline', [
        { labels: { path: 'x"y\\z\nw' }, value: 3 },
        { labels: { path: 'b' }, value: 1.5 },
      ])
      .family('b', 'gauge', 'a bool', true)
      .family('c', 'gauge', 'absent', null)
      .toString();
    const f = parseExposition(text);
    expect(f.get('a_total')?.samples[0]?.labels['path']).toBe('x\\"y\\\\z\\nw');
    expect(f.get('b')?.samples).toEqual([{ labels: {}, value: 1 }]);
    expect(f.has('c')).toBe(false);
    expect(gpioMetricName('input', 'state', 'a.b-c')).toBe('pikvm_gpio_input_state_a_b_c');
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
    expect(res.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
    const f = parseExposition(res.body);
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
