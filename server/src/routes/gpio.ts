/** `/api/gpio*`: kvmd's user GPIO over our ATX, Wake-on-LAN and fingerbot (wire-protocol.md 1.8). */
import type { FastifyInstance } from 'fastify';
import { GPIO_CHANNEL_MAX, GPIO_CHANNEL_RE } from '@kvm/protocol';
import type { GpioService } from '../services/gpio/gpio-service';
import { bool, fail, float } from '../validators';

function channelArg(value: unknown): string {
  if (typeof value !== 'string') return fail('channel', value, 'GPIO channel');
  const v = value.trim();
  if (!GPIO_CHANNEL_RE.test(v) || v.length > GPIO_CHANNEL_MAX) {
    return fail('channel', value, 'GPIO channel');
  }
  return v;
}

/** kvmd's valid_float_f0: a finite number >= 0; absent means the channel's default. */
function delayArg(value: unknown): number {
  return float('delay', value, { min: 0, fallback: 0, what: 'float >= 0' });
}

export function gpioRoutes(app: FastifyInstance, gpio: GpioService): void {
  app.get('/api/gpio', async () => gpio.getState());

  app.post('/api/gpio/switch', async (request) => {
    const q = request.query as Record<string, unknown>;
    const channel = channelArg(q['channel']);
    const state = bool('state', q['state']);
    await gpio.switch(channel, state, bool('wait', q['wait'], false));
    return {};
  });

  app.post('/api/gpio/pulse', async (request) => {
    const q = request.query as Record<string, unknown>;
    const channel = channelArg(q['channel']);
    const delay = delayArg(q['delay']);
    await gpio.pulse(channel, delay, bool('wait', q['wait'], false));
    return {};
  });
}
