import { describe, expect, it } from 'vitest';
import { openWithin } from './open-within';

function fakeClient(): { close(): void; closed: number } {
  const c = {
    closed: 0,
    close() {
      c.closed += 1;
    },
  };
  return c;
}

describe('openWithin', () => {
  it('resolves with the client once opened and the next steps are done', async () => {
    const client = fakeClient();
    const steps: string[] = [];
    await expect(
      openWithin(client, Promise.resolve(), {
        timeoutMs: 1000,
        timeoutError: () => new Error('late'),
        then: async () => {
          steps.push('capabilities');
        },
      }),
    ).resolves.toBe(client);
    expect(steps).toEqual(['capabilities']);
    expect(client.closed).toBe(0);
  });

  it('closes the half-open client when the peer says nothing in time', async () => {
    const client = fakeClient();
    await expect(
      openWithin(client, new Promise<void>(() => undefined), {
        timeoutMs: 20,
        timeoutError: () => new Error('greeting over 20 ms'),
      }),
    ).rejects.toThrow('greeting over 20 ms');
    expect(client.closed).toBe(1);
  });

  it('closes the client when the opening or a later step fails', async () => {
    const early = fakeClient();
    await expect(
      openWithin(early, Promise.reject(new Error('closed before the greeting')), {
        timeoutMs: 1000,
        timeoutError: () => new Error('late'),
      }),
    ).rejects.toThrow('closed before the greeting');
    expect(early.closed).toBe(1);
    const later = fakeClient();
    await expect(
      openWithin(later, Promise.resolve(), {
        timeoutMs: 1000,
        timeoutError: () => new Error('late'),
        then: () => Promise.reject(new Error('capabilities refused')),
      }),
    ).rejects.toThrow('capabilities refused');
    expect(later.closed).toBe(1);
  });
});
